package executor

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestSeatbeltGolden compares the generated Seatbelt profiles with the
// committed ones. Regenerate with:
//
//	go test ./executor -run TestSeatbeltGolden -update
func TestSeatbeltGolden(t *testing.T) {
	sb := &ipc.SandboxSpec{
		ReadOnly:  []string{"/opt/tool", "/Users/agent/ref data"},
		ReadWrite: []string{"/Users/agent/project", "/private/var/stockade/work/c1/tmp"},
	}
	for _, tt := range []struct {
		name   string
		egress bool
	}{{"nonet", false}, {"egress", true}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := seatbeltProfile(sb, tt.egress)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("..", "testdata", "seatbelt", tt.name+".sb")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("profile differs from %s:\n%s", file, got)
			}
			if strings.Contains(got, "network-outbound") != tt.egress {
				t.Fatal("network rule does not follow egress")
			}
			if !strings.HasPrefix(got, "(version 1)\n(deny default)") {
				t.Fatal("profile does not deny by default")
			}
		})
	}
}

func TestSeatbeltRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"relative", "/a/../b", "/new\nline", `/x") (allow default) ("`} {
		sb := &ipc.SandboxSpec{ReadWrite: []string{p}}
		got, err := seatbeltProfile(sb, false)
		if p == `/x") (allow default) ("` {
			// Quotes are escaped, never able to close the string.
			if err != nil || !strings.Contains(got, `(subpath "/x\") (allow default) (\"")`) {
				t.Fatalf("quote not escaped: %v\n%s", err, got)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}
