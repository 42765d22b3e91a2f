package skill

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHelloModuleBytes pins the hand-written module in testdata: the
// smallest module with one exported function, hello() -> i32, returning 42.
func TestHelloModuleBytes(t *testing.T) {
	want := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
		0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type section: 1 type, func () -> (i32)
		0x03, 0x02, 0x01, 0x00, // function section: 1 function of type 0
		0x07, 0x09, 0x01, 0x05, 'h', 'e', 'l', 'l', 'o', 0x00, 0x00, // export section: "hello" = func 0
		0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, 0x2a, 0x0b, // code section: no locals, i32.const 42, end
	}
	if got := helloFiles(t)["modules/hello.wasm"]; !bytes.Equal(got, want) {
		t.Fatalf("testdata/skills/hello/modules/hello.wasm = % x; want % x", got, want)
	}
}

func TestOpenHello(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	s := mustOpen(t, archive, envelope)
	m := s.Manifest
	if m.ID != "stockade.hello" || m.Version.String() != "1.0.0" || m.Sequence != 1 || m.Publisher != "Stockade tests" {
		t.Errorf("manifest identity = %q %v %d %q", m.ID, m.Version, m.Sequence, m.Publisher)
	}
	if len(m.Tools) != 1 || m.Tools[0] != (Tool{
		Name: "hello", Module: "modules/hello.wasm", Export: "hello", Description: "Returns 42.",
		InputSchema:  `{"type":"object","properties":{},"additionalProperties":false}`,
		OutputSchema: `{"type":"integer"}`,
	}) {
		t.Errorf("tools = %+v", m.Tools)
	}
	wantCaps := Capabilities{HTTP: []string{"api.example.com"}, Secrets: []string{"greeting_token"}, Channels: []string{"notify"}}
	if !slices.Equal(m.Capabilities.HTTP, wantCaps.HTTP) || !slices.Equal(m.Capabilities.Secrets, wantCaps.Secrets) ||
		!slices.Equal(m.Capabilities.Channels, wantCaps.Channels) || m.Capabilities.Storage {
		t.Errorf("capabilities = %+v", m.Capabilities)
	}
	if m.Limits != (ResourceLimits{Fuel: 1_000_000, MemoryBytes: 1 << 20, Timeout: 2 * time.Second}) {
		t.Errorf("limits = %+v", m.Limits)
	}
	if s.Publisher != fingerprint(publisherKey) || !s.PublicKey.Equal(publisherKey.Public()) {
		t.Errorf("publisher = %s", s.Publisher)
	}
	env, err := ParseEnvelope(envelope)
	if err != nil {
		t.Fatal(err)
	}
	if s.StatementDigest != sha256.Sum256(env.Payload) {
		t.Error("statement digest is not the SHA-256 of the payload")
	}
	src := helloFiles(t)
	if len(s.Files) != len(src) {
		t.Fatalf("%d files; want %d", len(s.Files), len(src))
	}
	for _, f := range s.Files {
		if !bytes.Equal(f.Data, src[f.Path]) || f.Size != int64(len(src[f.Path])) || f.SHA256 != sha256.Sum256(src[f.Path]) {
			t.Errorf("file %s differs from the source", f.Path)
		}
	}
	if _, ok := s.File("modules/hello.wasm"); !ok {
		t.Error("File(modules/hello.wasm) not found")
	}
}

// TestTamperArchive flips each bit of every byte of the archive: the
// signed digest refuses each one before the ZIP is parsed.
func TestTamperArchive(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	accept := acceptOnly(publisherKey)
	for i := range archive {
		for _, bit := range []byte{0x01, 0x80} {
			b := slices.Clone(archive)
			b[i] ^= bit
			_, err := Open(b, envelope, accept)
			if ReasonOf(err) != ReasonArchiveDigest {
				t.Fatalf("byte %d ^ %#x: %v; want %s", i, bit, err, ReasonArchiveDigest)
			}
		}
	}
	_, err := Open(archive[:len(archive)-1], envelope, accept)
	wantReason(t, err, ReasonArchiveSize)
	_, err = Open(append(slices.Clone(archive), 0), envelope, accept)
	wantReason(t, err, ReasonArchiveSize)
}

// TestTamperEnvelope changes every byte of the envelope: nothing opens.
func TestTamperEnvelope(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	accept := acceptOnly(publisherKey)
	for i := range envelope {
		for _, bit := range []byte{0x01, 0x20} {
			b := slices.Clone(envelope)
			b[i] ^= bit
			if _, err := Open(archive, b, accept); err == nil {
				t.Fatalf("byte %d ^ %#x: accepted", i, bit)
			} else if ReasonOf(err) == "" {
				t.Fatalf("byte %d ^ %#x: untyped error %v", i, bit, err)
			}
		}
	}
}

// TestTamperStatement changes every byte of the signed statement and puts
// it back in the envelope under the original signature: the signature
// refuses each one, before the statement is parsed.
func TestTamperStatement(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	env, err := ParseEnvelope(envelope)
	if err != nil {
		t.Fatal(err)
	}
	for i := range env.Payload {
		e := *env
		e.Payload = slices.Clone(env.Payload)
		e.Payload[i] ^= 0x01
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(archive, b, acceptOnly(publisherKey))
		if ReasonOf(err) != ReasonSignature {
			t.Fatalf("statement byte %d: %v; want %s", i, err, ReasonSignature)
		}
	}
}

// TestTamperFiles changes every byte of every file and rebuilds the
// archive the same way. With the original envelope, the archive digest
// refuses it. Re-signed by the publisher with the new archive's digest but
// the old file digests (a statement that lies about one file), the file's
// own digest refuses it: the archive digest is not the only check.
func TestTamperFiles(t *testing.T) {
	t.Parallel()
	_, envelope := buildHello(t)
	src, err := readSource(helloDir)
	if err != nil {
		t.Fatal(err)
	}
	orig := helloFiles(t)
	accept := acceptOnly(publisherKey)
	for fi, f := range src {
		for i := range f.Data {
			files := slices.Clone(src)
			files[fi].Data = slices.Clone(f.Data)
			files[fi].Data[i] ^= 0x01
			archive, err := writeArchive(files)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(archive, envelope, accept)
			if r := ReasonOf(err); r != ReasonArchiveDigest && r != ReasonArchiveSize { // deflated files may change size
				t.Fatalf("%s byte %d, original envelope: %v; want %s", f.Path, i, err, ReasonArchiveDigest)
			}
			_, err = Open(archive, signArchive(t, archive, orig), accept)
			if ReasonOf(err) != ReasonEntryDigest {
				t.Fatalf("%s byte %d, re-signed archive digest: %v; want %s", f.Path, i, err, ReasonEntryDigest)
			}
		}
	}
}

// envelopeJSONWith returns the hello envelope's JSON with edit applied to
// its generic form.
func envelopeJSONWith(t *testing.T, envelope []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(envelope, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenRefusesSignatures(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	files := helloFiles(t)
	env, err := ParseEnvelope(envelope)
	if err != nil {
		t.Fatal(err)
	}
	sig0 := func(m map[string]any) map[string]any { return m["signatures"].([]any)[0].(map[string]any) }
	b64 := base64.StdEncoding.EncodeToString
	otherPub := otherKey.Public().(ed25519.PublicKey)

	twoSigs := *env
	other, _ := Sign(PayloadType, env.Payload, otherKey)
	twoSigs.Signatures = append(slices.Clone(env.Signatures), other.Signatures[0])
	twoSigsJSON, err := twoSigs.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	wrongType, _ := Sign("application/vnd.stockade.key-rotation.v1+json", env.Payload, publisherKey)
	wrongTypeJSON, _ := wrongType.Marshal()
	otherSigned := signStatement(t, otherKey, helloStatement(otherKey, archive, files))

	cases := []struct {
		name     string
		envelope []byte
		accept   func(Fingerprint) error
		reason   Reason
	}{
		{"signed by a key not accepted", otherSigned, acceptOnly(publisherKey), ReasonKeyRefused},
		{"key not accepted", envelope, acceptOnly(otherKey), ReasonKeyRefused},
		{"no key check", envelope, nil, ReasonKeyRefused},
		{"signed by another key, naming the publisher", signPayload(t, otherKey, env.Payload), acceptOnly(publisherKey, otherKey), ReasonPublisherMismatch},
		{"two signatures", twoSigsJSON, acceptOnly(publisherKey, otherKey), ReasonSignatureCount},
		{"no signature", envelopeJSONWith(t, envelope, func(m map[string]any) { m["signatures"] = []any{} }), nil, ReasonSignatureCount},
		{"wrong payload type", wrongTypeJSON, acceptOnly(publisherKey), ReasonPayloadType},
		{"short key", envelopeJSONWith(t, envelope, func(m map[string]any) { sig0(m)["publicKey"] = b64(make([]byte, 31)) }), nil, ReasonKeyLength},
		{"long key", envelopeJSONWith(t, envelope, func(m map[string]any) { sig0(m)["publicKey"] = b64(make([]byte, 33)) }), nil, ReasonKeyLength},
		{"empty key", envelopeJSONWith(t, envelope, func(m map[string]any) { sig0(m)["publicKey"] = "" }), nil, ReasonKeyLength},
		{"short signature", envelopeJSONWith(t, envelope, func(m map[string]any) { sig0(m)["sig"] = b64(make([]byte, 63)) }), nil, ReasonSignatureLength},
		{"keyid of another key", envelopeJSONWith(t, envelope, func(m map[string]any) { sig0(m)["keyid"] = string(fingerprint(otherKey)) }), nil, ReasonKeyID},
		{"key swapped, keyid kept", envelopeJSONWith(t, envelope, func(m map[string]any) { sig0(m)["publicKey"] = b64(otherPub) }), nil, ReasonKeyID},
		{"key and keyid swapped", envelopeJSONWith(t, envelope, func(m map[string]any) {
			sig0(m)["publicKey"], sig0(m)["keyid"] = b64(otherPub), string(fingerprint(otherKey))
		}), acceptOnly(otherKey), ReasonSignature},
		{"unknown member", envelopeJSONWith(t, envelope, func(m map[string]any) { m["extra"] = 1 }), nil, ReasonEnvelopeMalformed},
		{"member in another case", envelopeJSONWith(t, envelope, func(m map[string]any) { m["PayloadType"] = m["payloadType"]; delete(m, "payloadType") }), nil, ReasonEnvelopeMalformed},
		{"repeated member", []byte(strings.Replace(string(envelope), `"payloadType":`, `"payloadType":"x","payloadType":`, 1)), nil, ReasonEnvelopeMalformed},
		{"null signatures", envelopeJSONWith(t, envelope, func(m map[string]any) { m["signatures"] = nil }), nil, ReasonEnvelopeMalformed},
		{"base64 with a line break", []byte(strings.Replace(string(envelope), `"payload":"`, `"payload":"\n`, 1)), nil, ReasonEnvelopeMalformed},
		{"URL-safe base64", envelopeJSONWith(t, envelope, func(m map[string]any) {
			m["payload"] = base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xff}, 8))
		}), nil, ReasonEnvelopeMalformed},
		{"trailing value", append(slices.Clone(envelope), " {}"...), nil, ReasonEnvelopeMalformed},
		{"not JSON", []byte("DSSEv1"), nil, ReasonEnvelopeMalformed},
		{"too large", bytes.Repeat([]byte(" "), 200<<10), nil, ReasonEnvelopeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			accept := c.accept
			if accept == nil && c.name != "no key check" {
				accept = acceptOnly(publisherKey)
			}
			_, err := Open(archive, c.envelope, accept)
			wantReason(t, err, c.reason)
		})
	}
}

func TestOpenKeyRefusalWraps(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	errRevoked := errors.New("revoked")
	var asked []Fingerprint
	_, err := Open(archive, envelope, func(fp Fingerprint) error { asked = append(asked, fp); return errRevoked })
	wantReason(t, err, ReasonKeyRefused)
	if !errors.Is(err, errRevoked) {
		t.Errorf("%v does not wrap the key check's error", err)
	}
	if len(asked) != 1 || asked[0] != fingerprint(publisherKey) {
		t.Errorf("accept asked about %v", asked)
	}
	if ReasonKeyRefused.Class() != ClassRefused || ReasonArchiveDigest.Class() != ClassInvalid || ReasonOverlap.Class() != ClassMalformed {
		t.Error("reason classes")
	}
}

// TestOpenRefusesStatements signs statements that are wrong about the
// archive, or not canonical, with the publisher's own key.
func TestOpenRefusesStatements(t *testing.T) {
	t.Parallel()
	archive, envelope := buildHello(t)
	env, _ := ParseEnvelope(envelope)
	files := helloFiles(t)
	good := func() *Statement { return helloStatement(publisherKey, archive, files) }
	edit := func(f func(st *Statement)) []byte {
		st := good()
		f(st)
		return signStatement(t, publisherKey, st)
	}
	raw := func(f func(s string) string) []byte {
		return signPayload(t, publisherKey, []byte(f(string(env.Payload))))
	}

	cases := []struct {
		name     string
		envelope []byte
		reason   Reason
	}{
		{"other skill id", edit(func(st *Statement) { st.ID = "stockade.other" }), ReasonBinding},
		{"other version", edit(func(st *Statement) { st.Version = Version{Major: 1, Minor: 0, Patch: 1} }), ReasonBinding},
		{"other sequence", edit(func(st *Statement) { st.Sequence = 2 }), ReasonBinding},
		{"other archive digest", edit(func(st *Statement) { st.Archive.SHA256[0] ^= 1 }), ReasonArchiveDigest},
		{"other archive size", edit(func(st *Statement) { st.Archive.Size++ }), ReasonArchiveSize},
		{"file left out", edit(func(st *Statement) { st.Files = st.Files[1:] }), ReasonUnsigned},
		{"file digest wrong", edit(func(st *Statement) { st.Files[1].SHA256[31] ^= 1 }), ReasonEntryDigest},
		{"whitespace", raw(func(s string) string { return strings.Replace(s, `{"skill":`, `{ "skill":`, 1) }), ReasonNotCanonical},
		{"members reordered", raw(func(s string) string {
			return strings.Replace(s, `"id":"stockade.hello","version":"1.0.0"`, `"version":"1.0.0","id":"stockade.hello"`, 1)
		}), ReasonNotCanonical},
		{"escaped character", raw(func(s string) string { return strings.Replace(s, `"stockade.hello"`, `"stockade.hell\u006f"`, 1) }), ReasonNotCanonical},
		{"upper-case hex", raw(func(s string) string {
			i := strings.Index(s, `"sha256":"`) + len(`"sha256":"`)
			return s[:i] + strings.ToUpper(s[i:i+64]) + s[i+64:]
		}), ReasonStatementInvalid},
		{"repeated member", raw(func(s string) string { return strings.Replace(s, `"sequence":1`, `"sequence":1,"sequence":9`, 1) }), ReasonStatementMalformed},
		{"member in another case", raw(func(s string) string { return strings.Replace(s, `"sequence":1`, `"sequence":1,"Sequence":9`, 1) }), ReasonStatementMalformed},
		{"unknown member", raw(func(s string) string {
			return strings.Replace(s, `"sequence":1`, `"sequence":1,"created":"2026-01-01"`, 1)
		}), ReasonStatementMalformed},
		{"fractional sequence", raw(func(s string) string { return strings.Replace(s, `"sequence":1`, `"sequence":1.0`, 1) }), ReasonStatementMalformed},
		{"negative size", raw(func(s string) string { return strings.Replace(s, `"size":38`, `"size":-38`, 1) }), ReasonStatementInvalid},
		{"sequence 0", raw(func(s string) string { return strings.Replace(s, `"sequence":1`, `"sequence":0`, 1) }), ReasonSequence},
		{"files unsorted", raw(func(s string) string {
			i, j := strings.Index(s, `{"path":"assets`), strings.Index(s, `{"path":"modules`)
			k := strings.Index(s, `{"path":"skill.toml`)
			return s[:i] + s[j:k] + s[i:j] + s[k:]
		}), ReasonStatementFiles},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(archive, c.envelope, acceptOnly(publisherKey))
			wantReason(t, err, c.reason)
		})
	}
}

// TestOpenRefusesManifestMismatch signs well-formed archives whose
// manifest does not fit the archive.
func TestOpenRefusesManifestMismatch(t *testing.T) {
	t.Parallel()
	files := helloFiles(t)
	for _, c := range []struct {
		name   string
		edit   func(string) string
		reason Reason
	}{
		{"module missing", func(s string) string {
			return strings.Replace(s, `module        = "modules/hello.wasm"`, `module        = "modules/gone.wasm"`, 1)
		}, ReasonModule},
		{"manifest unknown key", func(s string) string { return s + "\nauto_update = true\n" }, ReasonManifestMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := maps.Clone(files)
			fs[ManifestPath] = []byte(c.edit(string(files[ManifestPath])))
			var es []entry
			for _, p := range slices.Sorted(maps.Keys(fs)) {
				es = append(es, entry{name: p, data: fs[p]})
			}
			archive := craftZip(t, "", es...)
			_, err := Open(archive, signArchive(t, archive, fs), acceptOnly(publisherKey))
			wantReason(t, err, c.reason)
		})
	}
}
