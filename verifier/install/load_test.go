package install

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// TestLoadRefusesTampering installs a real skill, changes it on disk the way
// an attacker or an accident would, and requires Load to refuse each change
// with its reason.
func TestLoadRefusesTampering(t *testing.T) {
	t.Parallel()
	const (
		manifest = skill.ManifestPath
		module   = "modules/hello.wasm"
		asset    = "assets/greeting.txt"
	)
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   Reason
	}{
		{"flip a byte of the module", func(t *testing.T, dir string) {
			p := filepath.Join(dir, module)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x01
			write(t, p, b)
		}, ReasonDigest},
		{"flip a byte of skill.toml", func(t *testing.T, dir string) {
			p := filepath.Join(dir, manifest)
			b, _ := os.ReadFile(p)
			b[0] ^= 0x20
			write(t, p, b)
		}, ReasonDigest},
		{"truncate", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, asset), 3))
		}, ReasonSize},
		{"extend", func(t *testing.T, dir string) {
			p := filepath.Join(dir, asset)
			b, _ := os.ReadFile(p)
			write(t, p, append(b, '\n'))
		}, ReasonSize},
		{"empty", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, module), 0))
		}, ReasonSize},
		{"symlink to a copy", func(t *testing.T, dir string) {
			p := filepath.Join(dir, module)
			b, _ := os.ReadFile(p)
			copyPath := filepath.Join(t.TempDir(), "copy.wasm")
			write(t, copyPath, b)
			must(t, os.Remove(p))
			must(t, os.Symlink(copyPath, p))
		}, ReasonNotRegular},
		{"relative symlink inside", func(t *testing.T, dir string) {
			p := filepath.Join(dir, asset)
			must(t, os.Remove(p))
			must(t, os.Symlink("../skill.toml", p))
		}, ReasonNotRegular},
		{"directory symlink", func(t *testing.T, dir string) {
			other := t.TempDir()
			must(t, os.Rename(filepath.Join(dir, "assets"), filepath.Join(other, "assets")))
			must(t, os.Symlink(filepath.Join(other, "assets"), filepath.Join(dir, "assets")))
		}, ReasonNotRegular},
		{"hard link", func(t *testing.T, dir string) {
			must(t, os.Link(filepath.Join(dir, module), filepath.Join(t.TempDir(), "x")))
		}, ReasonNotRegular},
		{"extra file", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "modules", "evil.wasm"), []byte("\x00asm"))
		}, ReasonExtra},
		{"extra hidden file", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".hidden"), []byte("x"))
		}, ReasonExtra},
		{"extra directory", func(t *testing.T, dir string) {
			must(t, os.Mkdir(filepath.Join(dir, "lib"), 0o700))
		}, ReasonExtra},
		{"extra fifo", func(t *testing.T, dir string) {
			must(t, mkfifo(filepath.Join(dir, "assets", "pipe")))
		}, ReasonNotRegular},
		{"missing file", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, asset)))
		}, ReasonMissing},
		{"file replaced by a directory", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, asset)))
			must(t, os.Mkdir(filepath.Join(dir, asset), 0o700))
		}, ReasonNotRegular},
		{"chmod file 0644", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, module), 0o644))
		}, ReasonMode},
		{"chmod file executable", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, module), 0o700))
		}, ReasonMode},
		{"chmod dir 0755", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "modules"), 0o755))
		}, ReasonMode},
		{"chmod skill dir 0777", func(t *testing.T, dir string) {
			must(t, os.Chmod(dir, 0o777))
		}, ReasonMode},
		{"statement edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, StatementFile)
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 1
			write(t, p, b)
		}, ReasonDigest},
		{"statement removed", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, StatementFile)))
		}, ReasonMissing},
		{"skill dir replaced by a symlink", func(t *testing.T, dir string) {
			moved := filepath.Join(t.TempDir(), "moved")
			must(t, os.Rename(dir, moved))
			must(t, os.Symlink(moved, dir))
		}, ReasonNotRegular},
		{"not installed", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(dir))
		}, ReasonNotInstalled},
	}
	archive, envelope := buildArchive(t, variant{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sk := openSkill(t, archive, envelope)
			root := newRoot(t)
			dir := mustInstall(t, root, sk)
			if _, err := Load(root, sk.StatementDigest); err != nil {
				t.Fatalf("Load before tampering: %v", err)
			}
			tt.tamper(t, dir)
			got, err := Load(root, sk.StatementDigest)
			if got != nil {
				t.Fatalf("Load returned files after tampering")
			}
			wantReason(t, err, tt.want)
			// Install of the same release refuses too, rather than
			// reporting the tampered directory as installed.
			if tt.want == ReasonNotInstalled {
				return
			}
			_, err = Install(root, sk)
			if err == nil {
				t.Fatalf("Install accepted the tampered directory")
			}
		})
	}
}

// TestLoadNeedsOwner gives an installed file to another uid.
func TestLoadNeedsOwner(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another uid")
	}
	sk := buildSkill(t, variant{})
	root := newRoot(t)
	dir := mustInstall(t, root, sk)
	must(t, os.Lchown(filepath.Join(dir, skill.ManifestPath), 65534, 65534))
	_, err := Load(root, sk.StatementDigest)
	wantReason(t, err, ReasonOwner)
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	must(t, os.WriteFile(p, b, 0o600))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
