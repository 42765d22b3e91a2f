package meter

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFixturesUpToDate checks that every committed .wasm in testdata/wasm is
// what wat2wasm makes of the .wat beside it. It skips when wat2wasm (Debian
// package wabt) is not on PATH. Flags for wat2wasm come from a first-lines
// comment ";; wat2wasm-flags: ...". To regenerate after editing a .wat:
//
//	cd testdata/wasm && for f in *.wat; do wat2wasm $(sed -n 's/^;; wat2wasm-flags: //p' $f) $f -o ${f%.wat}.wasm; done
func TestFixturesUpToDate(t *testing.T) {
	t.Parallel()
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm not on PATH (apt-get install wabt)")
	}
	sources, err := filepath.Glob(filepath.Join(fixtureDir, "*.wat"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	tmp := t.TempDir()
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".wat")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			var args []string
			for _, line := range strings.Split(string(text), "\n") {
				if flags, ok := strings.CutPrefix(line, ";; wat2wasm-flags: "); ok {
					args = append(args, strings.Fields(flags)...)
				}
			}
			out := filepath.Join(tmp, name+".wasm")
			args = append(args, src, "-o", out)
			if msg, err := exec.Command(wat2wasm, args...).CombinedOutput(); err != nil {
				t.Fatalf("wat2wasm %s: %v\n%s", strings.Join(args, " "), err, msg)
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(fixtureDir, name+".wasm"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s.wasm is stale; regenerate it (see the test's doc comment)", name)
			}
		})
	}
}
