package attest

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

// recordCases are records that must encode; they seed the fuzz targets
// and the benchmarks too.
func recordCases(k *Key) []struct {
	name string
	rec  Record
} {
	var prev Digest
	prev[0], prev[31] = 0xab, 0xcd
	skill := allowRecord(3)
	skill.Tier, skill.Receipt = "A", ipc.Receipt{Tier: "A", Backend: "wasm", Layers: []string{"fuel", "memory"}}
	skill.Artifact = Artifact{Kind: ArtifactSkill, Name: "acme/grep@1.2.0", Digest: DigestBytes([]byte("archive")),
		Modules: []Module{
			{Name: "main.wasm", Digest: DigestBytes([]byte("m")), Instrumented: DigestBytes([]byte("mi"))},
			{Name: "lib.wasm", Digest: DigestBytes([]byte("l")), Instrumented: DigestBytes([]byte("li"))},
		}}
	skill.Limits.Fuel, skill.Limits.FuelSchedule, skill.Usage.Fuel = 10_000_000, "fuel/v1", 123_456
	skill.Input = InputDigest(nil, `{"pattern":"x"}`)
	extreme := allowRecord(4)
	extreme.Result = Result{Status: ipc.StatusSignaled, ExitCode: math.MinInt64, Signal: "SIGKILL", Truncated: true}
	extreme.Limits.TimeoutMS, extreme.Limits.MaxOutput = math.MaxInt64, -1
	extreme.Usage = Usage{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64}
	extreme.Start, extreme.End = math.MinInt64, math.MaxInt64
	extreme.Principal = Principal{UID: math.MaxUint32, Name: "\x00\xff\u202e\n"}
	extreme.RunID = strings.Repeat("r", 128)
	extreme.Receipt.LandlockABI = -1
	failed := allowRecord(5)
	failed.Result, failed.Receipt, failed.Stdout, failed.Stderr = Result{Error: ipc.ClassSandboxUnavailable}, ipc.Receipt{}, Digest{}, Digest{}
	empty := Record{Decision: Deny, Result: Result{Error: ipc.ClassInvalidInput}}
	return []struct {
		name string
		rec  Record
	}{
		{"allow-tier-c", sealed(allowRecord(0), 1, Digest{}, k)},
		{"deny", sealed(denyRecord(1), 2, prev, k)},
		{"skill", sealed(skill, 3, prev, k)},
		{"extreme", sealed(extreme, math.MaxUint64, prev, k)},
		{"allowed-then-failed", sealed(failed, 5, prev, k)},
		{"empty-deny", sealed(empty, 6, prev, k)},
	}
}

// normalize makes empty lists nil, as Decode returns them.
func normalize(r Record) Record {
	if len(r.Policies) == 0 {
		r.Policies = nil
	}
	if len(r.Receipt.Namespaces) == 0 {
		r.Receipt.Namespaces = nil
	}
	if len(r.Receipt.Layers) == 0 {
		r.Receipt.Layers = nil
	}
	if len(r.Artifact.Modules) == 0 {
		r.Artifact.Modules = nil
	}
	return r
}

// TestEncodeRoundTrip: a record decodes to itself and re-encodes to the
// same bytes; lists that are empty and nil encode alike.
func TestEncodeRoundTrip(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	for _, c := range recordCases(k) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := Encode(&c.rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if want := normalize(c.rec); !reflect.DeepEqual(*got, want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", *got, want)
			}
			b2, err := Encode(got)
			if err != nil || !bytes.Equal(b, b2) {
				t.Fatalf("re-encoding differs (%v)", err)
			}
			withEmpty := c.rec
			withEmpty.Policies = append([]string{}, c.rec.Policies...)
			withEmpty.Receipt.Layers = append([]string{}, c.rec.Receipt.Layers...)
			if b3, _ := Encode(&withEmpty); !bytes.Equal(b, b3) {
				t.Fatal("an empty list encodes unlike a nil one")
			}
		})
	}
}

// TestDecodeRefuses: every strict prefix, a trailing byte, another
// version, a boolean other than 0 or 1, and lists or strings that claim
// more than the bytes hold are refused.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	good, err := Encode(&recordCases(k)[2].rec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		if _, err := Decode(good[:i]); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
	}
	bad := map[string][]byte{
		"trailing": append(bytes.Clone(good), 0),
		"version":  append([]byte{2}, good[1:]...),
	}
	// The truncated flag is the byte before usage (5×8), start and end (2×8).
	tr := bytes.Clone(good)
	tr[len(tr)-56-1] = 2
	bad["bool-2"] = tr
	// The key id's length claims 4 GiB.
	huge := bytes.Clone(good)
	copy(huge[1+8+32:], []byte{0xff, 0xff, 0xff, 0xff})
	bad["string-past-end"] = huge
	// A record that is only a version and a list of 2^32-1 policies.
	bad["list-bomb"] = append(append([]byte{1}, make([]byte, 8+32)...), 0xff, 0xff, 0xff, 0xff)
	bad["oversize"] = make([]byte, MaxRecordSize+1)
	for name, b := range bad {
		if _, err := Decode(b); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestValidate: records that contradict themselves are refused by Encode.
func TestValidate(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	var h Digest
	h[0] = 1
	base := sealed(allowRecord(0), 2, h, k)
	cases := []struct {
		name string
		edit func(*Record)
	}{
		{"seq-0", func(r *Record) { r.Seq = 0 }},
		{"seq-1-with-prev", func(r *Record) { r.Seq = 1 }},
		{"seq-2-without-prev", func(r *Record) { r.Prev = Digest{} }},
		{"no-key-id", func(r *Record) { r.KeyID = "" }},
		{"upper-key-id", func(r *Record) { r.KeyID = strings.ToUpper(r.KeyID) }},
		{"decision-0", func(r *Record) { r.Decision = 0 }},
		{"decision-3", func(r *Record) { r.Decision = 3 }},
		{"status-and-error", func(r *Record) { r.Result.Error = ipc.ClassInternal }},
		{"neither", func(r *Record) { r.Result.Status = "" }},
		{"denied-but-ran", func(r *Record) { r.Decision = Deny }},
		{"too-large", func(r *Record) { r.Policies = []string{strings.Repeat("p", MaxRecordSize)} }},
	}
	for _, c := range cases {
		r := base
		c.edit(&r)
		if _, err := Encode(&r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := Encode(&base); err != nil {
		t.Fatal(err)
	}
}

// TestEncodingCoversIPCTypes fails when ipc.Receipt or ipc.Rlimits gain or
// lose a field: the encoding lists their fields one by one, so a new field
// would silently go unattested. Add it to Encode and Decode, to the table
// in docs/ATTESTATIONS.md, and bump Version.
func TestEncodingCoversIPCTypes(t *testing.T) {
	t.Parallel()
	want := map[reflect.Type]string{
		reflect.TypeFor[ipc.Receipt](): "Tier string, Backend string, LandlockABI int, Seccomp string, SeccompDigest string, Namespaces []string, BwrapVersion string, Cgroup string, Layers []string",
		reflect.TypeFor[ipc.Rlimits](): "CPUSeconds uint64, AddressSpace uint64, NoFile uint64, NProc uint64, FileSize uint64, Pids uint64, Memory uint64",
	}
	for typ, w := range want {
		var fields []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			fields = append(fields, f.Name+" "+f.Type.String())
		}
		if got := strings.Join(fields, ", "); got != w {
			t.Errorf("%v has fields\n  %s\nthe encoding covers\n  %s", typ, got, w)
		}
	}
}

// TestSetOutcome: the helpers copy what the broker has into the record.
func TestSetOutcome(t *testing.T) {
	t.Parallel()
	var r Record
	spec := &ipc.ExecSpec{Path: "/usr/bin/true", Tier: "C", TimeoutMS: 5000, MaxOutput: 4096, Limits: ipc.Rlimits{CPUSeconds: 3}}
	r.SetSpec(spec)
	out := &ipc.Outcome{Status: ipc.StatusExited, ExitCode: 3, Stdout: []byte("out"), Stderr: []byte("err!"),
		Truncated: true, Usage: ipc.Usage{UserMicros: 5, SystemMicros: -1, MaxRSSKiB: 7},
		Sandbox: ipc.Receipt{Tier: "C", Backend: "native", LandlockABI: 4}}
	r.SetOutcome(out)
	if r.Tier != "C" || r.Limits.TimeoutMS != 5000 || r.Limits.Rlimits.CPUSeconds != 3 || r.Artifact.Name != "/usr/bin/true" || r.Artifact.Kind != ArtifactBinary {
		t.Errorf("spec: %+v", r)
	}
	if r.Result != (Result{Status: ipc.StatusExited, ExitCode: 3, Truncated: true}) || r.Usage.OutputBytes != 7 ||
		r.Usage.SystemMicros != 0 || r.Stdout != DigestBytes([]byte("out")) || r.Receipt.LandlockABI != 4 {
		t.Errorf("outcome: %+v", r)
	}
	e := ipc.Errorf(ipc.ClassDenied, "denied by policy")
	e.Policies = []string{"forbid-shells"}
	r.SetError(e)
	if r.Result != (Result{Error: ipc.ClassDenied}) || len(r.Policies) != 1 {
		t.Errorf("error: %+v", r)
	}
}

// TestInputDigest: arguments are delimited, so moving bytes between them
// or into the document changes the digest.
func TestInputDigest(t *testing.T) {
	t.Parallel()
	seen := map[Digest]string{}
	for _, c := range []struct {
		args  []string
		input string
	}{
		{nil, ""}, {[]string{""}, ""}, {[]string{"ab"}, ""}, {[]string{"a", "b"}, ""},
		{[]string{"a"}, "b"}, {nil, "ab"}, {[]string{"", ""}, ""},
	} {
		d := InputDigest(c.args, c.input)
		key := strings.Join(c.args, "|") + "#" + c.input
		if prev, dup := seen[d]; dup {
			t.Errorf("%q and %q digest alike", prev, key)
		}
		seen[d] = key
	}
}
