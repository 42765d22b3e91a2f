package admin

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

// The admin bodies decode from bytes the verifier receives from admins (the
// requests) and the CLI receives from the verifier (the replies). Each
// target checks that what ipc's strict decoder accepts re-encodes to a fixed
// point, and that what it refuses is ipc.ErrMalformed.
//
//	go test -run='^$' -fuzz='^FuzzReleaseRef$' -fuzztime=10s ./verifier/admin/

func sampleRelease() Release {
	return Release{
		ID: "stockade.hello", Version: "1.0.0", Sequence: 1,
		Digest:    "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		Publisher: "ed25519:SHA256:mqCUKl8F_n-ztlDppR6x9JUXJ9zSuYtfin-vCe79xdc",
		State:     StateQuarantined, Reasons: []string{"new_publisher", "new_skill"}, AuditProblems: []string{},
		Capabilities: ipc.Capabilities{HTTP: []string{"api.example.com"}, Secrets: []string{}, Channels: []string{}},
		FirstSeen:    "2026-01-02T03:04:05Z", Changed: "2026-01-02T03:04:05Z",
		Audit: &AuditReport{OK: true, Allowed: []string{"stockade.log"}, Modules: []ModuleAudit{{
			Path: "modules/hello.wasm", SHA256: "sha256:22", Size: 38, OK: true, MemoryMaxPages: 1024, MemoryMaxImposed: true,
			Checks: []Check{{Name: "module.size", OK: true, Found: "38 bytes", Limit: "8388608 bytes"}},
		}}},
	}
}

// seed is one named input of the fuzz targets.
type seed struct {
	name string
	b    []byte
}

// seeds are encodings of every body, and bodies that must be refused
// (named "bad-"). Every target gets all of them.
func seeds(t testing.TB) []seed {
	enc := func(v any) []byte {
		b, err := ipc.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r := sampleRelease()
	return []seed{
		{"install-request", enc(InstallRequest{})},
		{"skill-ref", enc(SkillRef{ID: "stockade.hello"})},
		{"release-ref", enc(ReleaseRef{ID: "stockade.hello", Version: "1.0.0", Digest: r.Digest})},
		{"key-ref", enc(KeyRef{Fingerprint: r.Publisher})},
		{"rotation-request", enc(RotationRequest{Envelope: []byte(`{"payloadType":"x"}`)})},
		{"release", enc(r)},
		{"release-list", enc(ReleaseList{Releases: []Release{r, r}})},
		{"skill-info", enc(SkillInfo{ID: r.ID, Owner: r.Publisher, Current: r.Digest, Releases: []Release{r},
			HighWater:     []HighWater{{Publisher: r.Publisher, Sequence: 1, Digest: r.Digest}},
			Equivocations: []Equivocation{{Sequence: 1, Publisher: r.Publisher, Kept: r.Digest, Refused: r.Digest, Time: r.Changed}}})},
		{"key-list", enc(KeyList{Keys: []Key{{Fingerprint: r.Publisher, Skills: []string{r.ID}, Releases: 1, Revoked: true, RevokedAt: r.Changed}}})},
		{"doctor-report", enc(DoctorReport{OK: false, AuditRecords: 9,
			Releases: []DoctorRelease{{ID: r.ID, Version: r.Version, Digest: r.Digest, State: r.State, Files: FilesTampered}},
			Problems: []Problem{{Kind: ProblemTampered, Subject: "stockade.hello@1.0.0", Detail: "install.digest_mismatch"}}})},
		{"bad-array32-bomb", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"bad-extension-type", []byte{0x81, 0xa2, 'i', 'd', 0xd4, 1, 0}},
		{"bad-array-not-map", []byte{0x91, 0xa2, 'i', 'd'}},
		{"bad-unknown-field", []byte{0x81, 0xa1, 'x', 0xc0}},
		{"bad-trailing-byte", append(enc(SkillRef{ID: "a.b"}), 0)},
	}
}

func fuzzBody[T any](f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v T
		if err := ipc.Unmarshal(b, &v); err != nil {
			if !errors.Is(err, ipc.ErrMalformed) {
				t.Fatalf("refusal is not ErrMalformed: %v", err)
			}
			return
		}
		b1, err := ipc.Marshal(v)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		var w T
		if err := ipc.Unmarshal(b1, &w); err != nil {
			t.Fatalf("own encoding refused: %v", err)
		}
		b2, err := ipc.Marshal(w)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not a fixed point: %v", err)
		}
	})
}

func FuzzInstallRequest(f *testing.F)  { fuzzBody[InstallRequest](f) }
func FuzzSkillRef(f *testing.F)        { fuzzBody[SkillRef](f) }
func FuzzReleaseRef(f *testing.F)      { fuzzBody[ReleaseRef](f) }
func FuzzKeyRef(f *testing.F)          { fuzzBody[KeyRef](f) }
func FuzzRotationRequest(f *testing.F) { fuzzBody[RotationRequest](f) }
func FuzzRelease(f *testing.F)         { fuzzBody[Release](f) }
func FuzzReleaseList(f *testing.F)     { fuzzBody[ReleaseList](f) }
func FuzzSkillInfo(f *testing.F)       { fuzzBody[SkillInfo](f) }
func FuzzKeyList(f *testing.F)         { fuzzBody[KeyList](f) }
func FuzzDoctorReport(f *testing.F)    { fuzzBody[DoctorReport](f) }

// TestRoundTrip: every body decodes back to itself.
func TestRoundTrip(t *testing.T) {
	r := sampleRelease()
	for _, v := range []any{&r, &ReleaseRef{ID: "a.b", Version: "1.0.0"}, &KeyList{Keys: []Key{{Fingerprint: "f", Skills: []string{"a.b"}}}}} {
		b, err := ipc.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := reflect.New(reflect.TypeOf(v).Elem())
		if err := ipc.Unmarshal(b, got.Interface()); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Interface(), v) {
			t.Fatalf("%#v\n%#v", got.Interface(), v)
		}
	}
}

// TestFromWire: the reasons of the verifier's refusals reach the caller as
// *Error; an error without a reason gets the one its class implies.
func TestFromWire(t *testing.T) {
	for _, c := range []struct {
		in   error
		want Reason
	}{
		{ipc.ReasonError(ipc.ReasonRollback, "x"), ReasonRollback},
		{ipc.Errorf(ipc.ClassDenied, "uid 5 is not an admin"), ReasonDenied},
		{ipc.Errorf(ipc.ClassProtocol, "x"), ReasonProtocol},
		{ipc.Errorf(ipc.ClassInternal, "x"), ReasonInternal},
		{ipc.ErrMalformed, ReasonProtocol},
	} {
		err := fromWire(c.in)
		if ReasonOf(err) != c.want || !errors.Is(err, &Error{Reason: c.want}) || !errors.Is(err, c.want) {
			t.Errorf("%v → %v, want %s", c.in, err, c.want)
		}
	}
	plain := errors.New("connection reset")
	if fromWire(plain) != plain {
		t.Error("a transport error was rewritten")
	}
}
