package skill

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateCorpus = flag.Bool("update", false, "rewrite testdata/fuzz/<FuzzName>/seed-*")

// seed is one named input of a fuzz target: a []byte or a string.
type seed struct {
	name string
	v    any
}

// caseName makes a table case's name a file name: lower case, runs of
// anything but letters and digits as one '-'.
func caseName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func manifestSeeds(t testing.TB) []seed {
	var s []seed
	for _, c := range manifestCases {
		s = append(s, seed{caseName(c.name), []byte(c.toml)})
	}
	return append(s, seed{"hello", helloFiles(t)[ManifestPath]})
}

func versionSeeds() []seed {
	var s []seed
	for i, c := range versionCases {
		kind := "invalid"
		if c.valid {
			kind = "valid"
		}
		s = append(s, seed{fmt.Sprintf("%02d-%s", i, kind), c.s})
	}
	return s
}

func statementSeeds() []seed {
	var s []seed
	for _, c := range statementCases {
		s = append(s, seed{caseName(c.name), []byte(c.json)})
	}
	return s
}

func rotationSeeds() []seed {
	var s []seed
	for _, c := range rotationCases {
		s = append(s, seed{caseName(c.name), rotationJSONCase(c.json)})
	}
	return s
}

// openRotationSeeds are signed rotations (Ed25519 signatures are
// deterministic, the keys fixed): two good ones and one signed once.
func openRotationSeeds(t testing.TB) []seed {
	good, err := SignRotation(publisherKey, otherKey, []ID{"acme.web"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := SignRotation(otherKey, publisherKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	one, err := Sign(RotationPayloadType, []byte(`{}`), publisherKey)
	if err != nil {
		t.Fatal(err)
	}
	oneB, err := one.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return []seed{{"good", good}, {"all", all}, {"one-signature", oneB}}
}

// addSeeds adds seeds to f.
func addSeeds(f *testing.F, seeds []seed) {
	for _, s := range seeds {
		f.Add(s.v)
	}
}

// TestFuzzSeedCorpus keeps testdata/fuzz/<FuzzName>/seed-* equal to the
// seed tables, so that `go test` runs the committed corpus and other tools
// can start from it. Files the fuzzer adds (named by hash) are left alone.
// FuzzEnvelope and FuzzArchive are seeded from archives built at test time
// (their bytes depend on compress/flate, which a Go release may change), so
// they have no committed seeds. Regenerate with
//
//	go test ./verifier/skill -run TestFuzzSeedCorpus -update
func TestFuzzSeedCorpus(t *testing.T) {
	targets := map[string][]seed{
		"FuzzManifest":     manifestSeeds(t),
		"FuzzVersion":      versionSeeds(),
		"FuzzStatement":    statementSeeds(),
		"FuzzRotation":     rotationSeeds(),
		"FuzzOpenRotation": openRotationSeeds(t),
	}
	for target, seeds := range targets {
		want := map[string][]byte{}
		for _, s := range seeds {
			file := "seed-" + s.name
			if _, dup := want[file]; dup || s.name == "" {
				t.Fatalf("%s: seed name %q is empty or repeated", target, s.name)
			}
			switch v := s.v.(type) {
			case []byte:
				want[file] = fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", v)
			case string:
				want[file] = fmt.Appendf(nil, "go test fuzz v1\nstring(%q)\n", v)
			default:
				t.Fatalf("%s: seed %s is a %T", target, s.name, s.v)
			}
		}
		checkCorpus(t, filepath.Join("testdata", "fuzz", target), want)
	}
}

func checkCorpus(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	const regen = "go test ./verifier/skill -run TestFuzzSeedCorpus -update"
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
		for _, f := range old {
			if _, keep := want[filepath.Base(f)]; !keep {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		for file, data := range want {
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s: stale seed (regenerate: %s)", f, regen)
		}
	}
	for file, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s/%s is missing or differs (regenerate: %s)", dir, file, regen)
		}
	}
}
