package admin

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var updateCorpus = flag.Bool("update", false, "rewrite testdata/fuzz/<FuzzName>/seed-*")

// TestFuzzSeedCorpus keeps testdata/fuzz/<FuzzName>/seed-* equal to seeds,
// for every Fuzz target of fuzz_test.go, so that `go test` runs the
// committed corpus. Files the fuzzer adds (named by hash) are left alone.
// Regenerate with
//
//	go test ./verifier/admin -run TestFuzzSeedCorpus -update
func TestFuzzSeedCorpus(t *testing.T) {
	const regen = "go test ./verifier/admin -run TestFuzzSeedCorpus -update"
	src, err := os.ReadFile("fuzz_test.go")
	if err != nil {
		t.Fatal(err)
	}
	targets := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`).FindAllSubmatch(src, -1)
	if len(targets) < 10 {
		t.Fatalf("found %d fuzz targets in fuzz_test.go", len(targets))
	}
	want := map[string][]byte{}
	for _, s := range seeds(t) {
		file := "seed-" + s.name
		if _, dup := want[file]; dup {
			t.Fatalf("two seeds named %s", s.name)
		}
		want[file] = fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s.b)
	}
	for _, m := range targets {
		dir := filepath.Join("testdata", "fuzz", string(m[1]))
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
}
