package skill

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
)

// TestPAE checks the known answer of the DSSE specification's protocol.md.
func TestPAE(t *testing.T) {
	got := PAE("http://example.com/HelloWorld", []byte("hello world"))
	want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"
	if string(got) != want {
		t.Fatalf("PAE = %q; want %q", got, want)
	}
	if string(PAE("", nil)) != "DSSEv1 0  0 " {
		t.Fatalf("PAE of empties = %q", PAE("", nil))
	}
}

// exampleStatement and exampleStatementJSON pin the canonical encoding
// (docs/SKILLS.md shows the same statement).
var exampleStatement = &Statement{
	ID: "acme.web", Version: Version{Major: 1, Minor: 2}, Sequence: 7,
	Publisher: "ed25519:SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	Archive:   FileDigest{Size: 1234, SHA256: Digest{0xab}},
	Files: []FileDigest{
		{Path: "assets/prompt.txt", Size: 12, SHA256: Digest{1}},
		{Path: "modules/web.wasm", Size: 900, SHA256: Digest{2}},
		{Path: "skill.toml", Size: 300, SHA256: Digest{3}},
	},
}

const exampleStatementJSON = `{"skill":{"id":"acme.web","version":"1.2.0","sequence":7},` +
	`"publisher":{"fingerprint":"ed25519:SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},` +
	`"archive":{"sha256":"ab00000000000000000000000000000000000000000000000000000000000000","size":1234},` +
	`"files":[{"path":"assets/prompt.txt","size":12,"sha256":"0100000000000000000000000000000000000000000000000000000000000000"},` +
	`{"path":"modules/web.wasm","size":900,"sha256":"0200000000000000000000000000000000000000000000000000000000000000"},` +
	`{"path":"skill.toml","size":300,"sha256":"0300000000000000000000000000000000000000000000000000000000000000"}]}`

func TestStatementCanonical(t *testing.T) {
	t.Parallel()
	b, err := exampleStatement.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != exampleStatementJSON {
		t.Fatalf("Marshal =\n%s\nwant\n%s", b, exampleStatementJSON)
	}
	st, err := ParseStatement(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := st.Marshal()
	if !bytes.Equal(again, b) {
		t.Fatal("round trip changed the statement")
	}
}

// statementCases are statement payloads and the reasons ParseStatement
// refuses them for ("" = valid). They also seed FuzzStatement.
var statementCases = []struct {
	name   string
	json   string
	reason Reason
}{
	{"example", exampleStatementJSON, ""},
	{"not JSON", "statement", ReasonStatementMalformed},
	{"null", "null", ReasonStatementMalformed},
	{"array", "[]", ReasonStatementMalformed},
	{"empty object", "{}", ReasonID},
	{"trailing newline", exampleStatementJSON + "\n", ReasonNotCanonical},
	{"two values", exampleStatementJSON + "{}", ReasonStatementMalformed},
	{"repeated member", strings.Replace(exampleStatementJSON, `"sequence":7`, `"sequence":7,"sequence":8`, 1), ReasonStatementMalformed},
	{"member case", strings.Replace(exampleStatementJSON, `"sequence":7`, `"Sequence":7`, 1), ReasonStatementMalformed},
	{"unknown member", strings.Replace(exampleStatementJSON, `{"skill":`, `{"created":"now","skill":`, 1), ReasonStatementMalformed},
	{"null member", strings.Replace(exampleStatementJSON, `"files":[`, `"x":null,"files":[`, 1), ReasonStatementMalformed},
	{"string sequence", strings.Replace(exampleStatementJSON, `"sequence":7`, `"sequence":"7"`, 1), ReasonStatementMalformed},
	{"exponent", strings.Replace(exampleStatementJSON, `"sequence":7`, `"sequence":7e0`, 1), ReasonStatementMalformed},
	{"invalid UTF-8", strings.Replace(exampleStatementJSON, `acme.web`, "acme.w\xffb", 1), ReasonStatementMalformed},
	{"bad id", strings.Replace(exampleStatementJSON, `"acme.web"`, `"acme..web"`, 1), ReasonID},
	{"bad version", strings.Replace(exampleStatementJSON, `"1.2.0"`, `"1.2"`, 1), ReasonVersion},
	{"bad fingerprint", strings.Replace(exampleStatementJSON, `ed25519:SHA256:`, `sha256:`, 1), ReasonStatementInvalid},
	{"short digest", strings.Replace(exampleStatementJSON, `"ab00`, `"ab`, 1), ReasonStatementInvalid},
	{"zero archive size", strings.Replace(exampleStatementJSON, `"size":1234`, `"size":0`, 1), ReasonStatementInvalid},
	{"no files", exampleStatementJSON[:strings.Index(exampleStatementJSON, `"files"`)] + `"files":[]}`, ReasonStatementFiles},
	{"traversal", strings.Replace(exampleStatementJSON, `assets/prompt.txt`, `assets/../../x.txt`, 1), ReasonPathTraversal},
	{"outside the layout", strings.Replace(exampleStatementJSON, `assets/prompt.txt`, `bin/prompt.txt`, 1), ReasonPathLayout},
	{"unsorted", strings.Replace(exampleStatementJSON, `assets/prompt.txt`, `modules/zz.wasm`, 1), ReasonStatementFiles},
	{"case-folded repeat", strings.Replace(exampleStatementJSON, `assets/prompt.txt`, `modules/WEB.wasm`, 1), ReasonStatementFiles},
	{"no skill.toml", strings.Replace(exampleStatementJSON, `"skill.toml"`, `"assets/z.toml"`, 1), ReasonStatementFiles},
}

func TestParseStatement(t *testing.T) {
	t.Parallel()
	for _, c := range statementCases {
		t.Run(c.name, func(t *testing.T) {
			st, err := ParseStatement([]byte(c.json))
			if c.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if st != nil {
				t.Error("statement returned with an error")
			}
			wantReason(t, err, c.reason)
		})
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	env, err := Sign(PayloadType, []byte(exampleStatementJSON), publisherKey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	fps, err := got.Verify(PayloadType)
	if err != nil || len(fps) != 1 || fps[0] != fingerprint(publisherKey) {
		t.Fatalf("Verify = %v, %v", fps, err)
	}
	b2, _ := got.Marshal()
	if !bytes.Equal(b, b2) {
		t.Fatal("round trip changed the envelope")
	}
	if _, err := got.Verify("application/vnd.stockade.key-rotation.v1+json"); ReasonOf(err) != ReasonPayloadType {
		t.Errorf("other payload type: %v", err)
	}
}

// TestVerifyHandMade checks that envelopes built by hand with bad lengths
// are refused, not passed to ed25519.Verify (which would panic).
func TestVerifyHandMade(t *testing.T) {
	t.Parallel()
	env, _ := Sign(PayloadType, []byte("x"), publisherKey)
	for _, c := range []struct {
		name   string
		edit   func(s *Signature)
		reason Reason
	}{
		{"nil key", func(s *Signature) { s.PublicKey = nil }, ReasonKeyLength},
		{"long key", func(s *Signature) { s.PublicKey = append(s.PublicKey, 0) }, ReasonKeyLength},
		{"short signature", func(s *Signature) { s.Sig = s.Sig[:10] }, ReasonSignatureLength},
		{"bad signature", func(s *Signature) { s.Sig = make([]byte, ed25519.SignatureSize) }, ReasonSignature},
	} {
		e := *env
		s := e.Signatures[0]
		s.PublicKey = append(ed25519.PublicKey(nil), s.PublicKey...)
		c.edit(&s)
		s.KeyID = FingerprintOf(s.PublicKey)
		e.Signatures = []Signature{s}
		if _, err := e.Verify(PayloadType); ReasonOf(err) != c.reason {
			t.Errorf("%s: %v; want %s", c.name, err, c.reason)
		}
	}
	e := *env
	e.Signatures = nil
	if _, err := e.Verify(PayloadType); ReasonOf(err) != ReasonSignatureCount {
		t.Errorf("no signatures: %v", err)
	}
}

func TestDigestAndFingerprint(t *testing.T) {
	t.Parallel()
	d := Digest{0xab, 0xcd}
	got, err := ParseDigest(d.String())
	if err != nil || got != d {
		t.Fatalf("ParseDigest(%s) = %v, %v", d, got, err)
	}
	for _, s := range []string{"", "sha256:", "sha1:" + d.Hex(), "sha256:" + strings.ToUpper(d.Hex()), "sha256:" + d.Hex() + "0"} {
		if _, err := ParseDigest(s); err == nil {
			t.Errorf("ParseDigest(%q) accepted", s)
		}
	}
	fp := fingerprint(publisherKey)
	if _, err := ParseFingerprint(string(fp)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", string(fp) + "A", string(fp)[:len(fp)-1], strings.Replace(string(fp), "ed25519", "ED25519", 1), string(fp) + "="} {
		if _, err := ParseFingerprint(s); err == nil {
			t.Errorf("ParseFingerprint(%q) accepted", s)
		}
	}
}
