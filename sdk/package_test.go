//go:build !wasip1

package sdk

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/verifier/audit"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// stageSkill copies what a skill archive may hold (skill.toml and
// modules/*.wasm; the examples have no assets) out of an example's
// directory, leaving its src/ behind: skill.Build refuses any other file.
func stageSkill(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "skills", name)
	dst := t.TempDir()
	if err := os.Mkdir(filepath.Join(dst, "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{skill.ManifestPath, "modules/" + name + ".wasm"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestSkillsPackage packages each example with skill.Build, under a fresh
// key, and opens the result with skill.Open: a Go module (about 3.5 MB)
// fits the archive's limits, and comes back byte for byte.
func TestSkillsPackage(t *testing.T) {
	t.Parallel()
	for _, name := range exampleSkills {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pub, key, err := ed25519.GenerateKey(nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := stageSkill(t, name)
			archive, envelope, err := skill.Build(dir, key)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			s, err := skill.Open(archive, envelope, func(fp skill.Fingerprint) error {
				if fp != skill.FingerprintOf(pub) {
					return errors.New("another key")
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got := string(s.Manifest.ID); got != "stockade."+name {
				t.Errorf("id %s", got)
			}
			module, err := os.ReadFile(filepath.Join(dir, "modules", name+".wasm"))
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(s.Files, func(f skill.File) bool { return f.Path == "modules/"+name+".wasm" })
			if i < 0 || !bytes.Equal(s.Files[i].Data, module) {
				t.Errorf("the module did not come back from the archive intact")
			}
			t.Logf("%s: module %d bytes, archive %d bytes, envelope %d bytes", name, len(module), len(archive), len(envelope))
		})
	}
}

// TestSkillsSourceLayout: an example's own directory holds src/, which is
// not part of a skill: Build refuses it (path.layout) rather than leave it
// out, so examples are packaged from a staged copy (stageSkill).
func TestSkillsSourceLayout(t *testing.T) {
	t.Parallel()
	_, key, _ := ed25519.GenerateKey(nil)
	_, _, err := skill.Build(filepath.Join("..", "testdata", "skills", "gohello"), key)
	var se *skill.Error
	if !errors.As(err, &se) || se.Reason != skill.ReasonPathLayout || !strings.HasPrefix(se.Subject, "src/") {
		t.Errorf("Build of a directory with src/: %v, want %s on src/...", err, skill.ReasonPathLayout)
	}
}

// TestSkillsAudit runs the verifier's audit on each example module with
// its manifest's capabilities and audit.DefaultLimits, as install does,
// and requires it to pass every check. Two of them a Go module passes
// only because of the build: the function table's maximum, which Go's
// linker leaves out and the post-link step sdk/cmd/wasm-table-max sets
// (sdk.mk), and the number of data segments (Go's linker writes tens of
// thousands; the audit allows up to Go's own ceiling of 100,000).
func TestSkillsAudit(t *testing.T) {
	t.Parallel()
	for _, name := range exampleSkills {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", "testdata", "skills", name)
			module, err := os.ReadFile(filepath.Join(dir, "modules", name+".wasm"))
			if err != nil {
				t.Fatal(err)
			}
			mb, err := os.ReadFile(filepath.Join(dir, skill.ManifestPath))
			if err != nil {
				t.Fatal(err)
			}
			man, err := skill.ParseManifest(mb)
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			r := audit.Audit(module, audit.HostImports(man.Capabilities), audit.DefaultLimits())
			elapsed := time.Since(t0)
			for _, c := range r.Checks {
				if !c.OK {
					t.Errorf("audit: %s: %s (limit %s)", c.Name, c.Found, c.Limit)
				} else {
					t.Logf("%s: %s (limit %s)", c.Name, c.Found, c.Limit)
				}
			}
			if !r.OK() {
				t.Fatalf("the audit refuses %s: %v", name, r.Failed())
			}
			t.Logf("audited in %v", elapsed)
		})
	}
}
