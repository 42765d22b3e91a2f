package skill

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"io"
	"slices"
	"strings"
	"testing"
)

// The fuzz targets are seeded from the test tables; `make fuzz` runs them.
// Each asserts that the decoder never panics and that what it accepts
// satisfies the package's invariants.

func FuzzManifest(f *testing.F) {
	addSeeds(f, manifestSeeds(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := ParseID(string(m.ID)); err != nil {
			t.Fatalf("accepted id %q: %v", m.ID, err)
		}
		if v, err := ParseVersion(m.Version.String()); err != nil || v != m.Version {
			t.Fatalf("accepted version %v: %v", m.Version, err)
		}
		if len(m.Tools) == 0 || checkSequence(m.Sequence) != nil {
			t.Fatalf("accepted %+v", m)
		}
		for _, tool := range m.Tools {
			if !isModulePath(tool.Module) || checkPath(tool.Module) != nil || checkJSONText(tool.InputSchema, maxSchemaDepth) != nil {
				t.Fatalf("accepted tool %+v", tool)
			}
		}
	})
}

func FuzzVersion(f *testing.F) {
	addSeeds(f, versionSeeds())
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.String() != s {
			t.Fatalf("ParseVersion(%q).String() = %q", s, v.String())
		}
		if v.Compare(v) != 0 {
			t.Fatal("a version is not equal to itself")
		}
	})
}

func FuzzStatement(f *testing.F) {
	addSeeds(f, statementSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStatement(data)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Canonical: what is accepted is exactly what Marshal writes.
		b, err := st.Marshal()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("accepted a statement that does not round-trip: %v", err)
		}
		if !slices.IsSortedFunc(st.Files, func(a, b FileDigest) int { return strings.Compare(a.Path, b.Path) }) {
			t.Fatal("accepted unsorted files")
		}
	})
}

func FuzzEnvelope(f *testing.F) {
	archive, envelope := buildHello(f)
	byOther := signStatement(f, otherKey, helloStatement(otherKey, archive, helloFiles(f)))
	signed := [][]byte{mustPayload(f, envelope), mustPayload(f, byOther)}
	f.Add(envelope)
	f.Add(byOther)
	f.Add([]byte(`{"payloadType":"x","payload":"eA==","signatures":[{"keyid":"k","publicKey":"AA==","sig":"AA=="}]}`))
	f.Add([]byte(`{"payloadType":"x","payloadType":"y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := ParseEnvelope(data)
		if err == nil {
			b, err := env.Marshal()
			if err != nil {
				t.Fatalf("accepted envelope does not marshal: %v", err)
			}
			again, err := ParseEnvelope(b)
			if err != nil || !bytes.Equal(again.Payload, env.Payload) || len(again.Signatures) != len(env.Signatures) {
				t.Fatalf("round trip: %v", err)
			}
			env.Verify(PayloadType) // must not panic
		} else if ReasonOf(err) == "" {
			t.Fatalf("untyped error %v", err)
		}
		s, err := Open(archive, data, acceptOnly(publisherKey, otherKey))
		if err == nil && !slices.ContainsFunc(signed, func(p []byte) bool { return bytes.Equal(p, mustPayload(t, data)) }) {
			t.Fatalf("opened with a statement no key signed: %s", s.Statement.ID)
		}
	})
}

func mustPayload(t testing.TB, envelope []byte) []byte {
	env, err := ParseEnvelope(envelope)
	if err != nil {
		t.Fatal(err)
	}
	return env.Payload
}

// FuzzArchive feeds arbitrary archives to Open, each signed by the
// publisher with a statement made from a naive reading of it (archive/zip,
// every entry with a valid name). The signature always holds, so every
// check after it is exercised; whatever opens must satisfy the reader's
// invariants.
func FuzzArchive(f *testing.F) {
	archive, _ := buildHello(f)
	f.Add(archive)
	for _, c := range hostileCases(f) {
		f.Add(c.archive)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := DefaultLimits().withDefaults()
		scanArchive(data, lim) // must not panic, signed or not
		files := naiveFiles(data)
		if files == nil {
			return
		}
		payload, err := helloStatement(publisherKey, data, files).Marshal()
		if err != nil {
			return // not a statement anyone could sign
		}
		s, err := Open(data, signPayload(t, publisherKey, payload), acceptOnly(publisherKey))
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		entries, err := scanArchive(data, lim)
		if err != nil || len(entries) != len(s.Files) {
			t.Fatalf("opened an archive the scan refuses: %v", err)
		}
		folded := map[string]bool{}
		for _, f := range s.Files {
			if checkPath(f.Path) != nil || checkLayout(f.Path) != nil || folded[foldName(f.Path)] {
				t.Fatalf("opened a bad name %q", f.Path)
			}
			folded[foldName(f.Path)] = true
			if int64(len(f.Data)) != f.Size || sha256.Sum256(f.Data) != f.SHA256 || !bytes.Equal(f.Data, files[f.Path]) {
				t.Fatalf("%s: contents differ from the signed ones", f.Path)
			}
		}
	})
}

// naiveFiles reads data as archive/zip does, keeping entries whose names
// could be signed, or returns nil if there are none or no skill.toml.
func naiveFiles(data []byte) map[string][]byte {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil || len(zr.File) > 64 {
		return nil
	}
	files := map[string][]byte{}
	for _, zf := range zr.File {
		if checkPath(zf.Name) != nil || checkLayout(zf.Name) != nil {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
		rc.Close()
		if err == nil {
			files[zf.Name] = b
		}
	}
	if files[ManifestPath] == nil {
		return nil
	}
	return files
}
