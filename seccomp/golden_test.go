package seccomp

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/seccomp")

// TestGolden compares each profile's program, for each architecture, with
// its disassembly committed in testdata/seccomp/<profile>.<arch>.golden
// (at the repository root), so that any change to a filter shows up in
// review. After an intended change, regenerate them with:
//
//	go test ./seccomp -run TestGolden -update
func TestGolden(t *testing.T) {
	dir := filepath.Join("..", "testdata", "seccomp")
	for _, name := range Names() {
		for _, arch := range Arches() {
			t.Run(name+"/"+string(arch), func(t *testing.T) {
				_, prog := namedProgram(t, name, arch)
				got := prog.String()
				path := filepath.Join(dir, name+"."+string(arch)+".golden")
				if *update {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (regenerate with: go test ./seccomp -run TestGolden -update)", err)
				}
				if got == string(want) {
					return
				}
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := 0; i < len(gl) || i < len(wl); i++ {
					var g, w string
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if g != w {
						t.Fatalf("%s differs from line %d:\n got: %s\nwant: %s\n(if the change is intended: go test ./seccomp -run TestGolden -update)", path, i+1, g, w)
					}
				}
			})
		}
	}
}
