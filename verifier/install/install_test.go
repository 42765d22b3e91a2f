package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

func TestInstallLoad(t *testing.T) {
	t.Parallel()
	for _, v := range []variant{{}, {seq: 2, bigAsset: 70_000}} {
		sk := buildSkill(t, v)
		root := newRoot(t)
		dir := mustInstall(t, root, sk)
		if want := filepath.Join(root, sk.StatementDigest.Hex()); dir != want {
			t.Fatalf("dir = %s, want %s", dir, want)
		}
		got, err := Load(root, sk.StatementDigest)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		sameFiles(t, got, sk)
		if got.Dir != dir {
			t.Errorf("Load's Dir = %s, want %s", got.Dir, dir)
		}
		if f, ok := got.File(skill.ManifestPath); !ok || f.Size == 0 {
			t.Errorf("File(%s) = %v, %v", skill.ManifestPath, f.Size, ok)
		}
		// Modes as documented, on every entry.
		err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			want := FileMode
			if fi.IsDir() {
				want = DirMode
			}
			if fi.Mode() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Nothing but the skill in the root.
		entries, _ := os.ReadDir(root)
		if len(entries) != 1 {
			t.Errorf("root holds %d entries, want 1", len(entries))
		}
	}
}

func TestInstallIdempotent(t *testing.T) {
	t.Parallel()
	sk := buildSkill(t, variant{})
	root := newRoot(t)
	dir1 := mustInstall(t, root, sk)
	fi1, _ := os.Stat(filepath.Join(dir1, skill.ManifestPath))
	dir2 := mustInstall(t, root, sk)
	fi2, _ := os.Stat(filepath.Join(dir2, skill.ManifestPath))
	if dir1 != dir2 || !os.SameFile(fi1, fi2) {
		t.Fatalf("second install rewrote the skill: %s, %s", dir1, dir2)
	}
	// A damaged install is not silently accepted by a second Install.
	if err := os.WriteFile(filepath.Join(dir1, skill.ManifestPath), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Install(root, sk)
	wantReason(t, err, ReasonSize)
	// Remove and install again repairs it.
	if err := Remove(root, sk.StatementDigest); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	mustInstall(t, root, sk)
	if _, err := Load(root, sk.StatementDigest); err != nil {
		t.Fatalf("Load after reinstall: %v", err)
	}
}

func TestTwoReleases(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	a, b := buildSkill(t, variant{seq: 1}), buildSkill(t, variant{seq: 2})
	mustInstall(t, root, a)
	mustInstall(t, root, b)
	got, err := List(root)
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %v, %v", got, err)
	}
	for _, sk := range []*skill.Skill{a, b} {
		l, err := Load(root, sk.StatementDigest)
		if err != nil {
			t.Fatal(err)
		}
		sameFiles(t, l, sk)
	}
	if err := Remove(root, a.StatementDigest); err != nil {
		t.Fatal(err)
	}
	_, err = Load(root, a.StatementDigest)
	wantReason(t, err, ReasonNotInstalled)
	wantReason(t, Remove(root, a.StatementDigest), ReasonNotInstalled)
	if _, err := Load(root, b.StatementDigest); err != nil {
		t.Fatalf("Load of the other release: %v", err)
	}
}

func TestRootUnsafe(t *testing.T) {
	t.Parallel()
	sk := buildSkill(t, variant{})
	mk := func(t *testing.T, mode os.FileMode) string {
		root := newRoot(t)
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, mode); err != nil {
			t.Fatal(err)
		}
		return root
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string
	}{
		{"other-writable", func(t *testing.T) string { return mk(t, 0o707) }},
		{"group-writable", func(t *testing.T) string { return mk(t, 0o770) }},
		{"world-writable", func(t *testing.T) string { return mk(t, 0o777) }},
		{"symlink", func(t *testing.T) string {
			real := mk(t, 0o700)
			link := real + "-link"
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
		{"file", func(t *testing.T) string {
			root := newRoot(t)
			if err := os.WriteFile(root, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return root
		}},
		{"not ours", func(t *testing.T) string {
			if os.Getuid() != 0 {
				t.Skip("needs root to give the directory to another uid")
			}
			root := mk(t, 0o700)
			if err := os.Chown(root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return root
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tt.setup(t)
			_, err := Install(root, sk)
			wantReason(t, err, ReasonRootUnsafe)
			_, err = Load(root, sk.StatementDigest)
			wantReason(t, err, ReasonRootUnsafe)
			wantReason(t, Remove(root, sk.StatementDigest), ReasonRootUnsafe)
			_, err = Clean(root)
			wantReason(t, err, ReasonRootUnsafe)
		})
	}
}

func TestInstallRefusesInconsistentSkill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper func(sk *skill.Skill)
	}{
		{"nil statement", func(sk *skill.Skill) { sk.Statement = nil }},
		{"wrong digest", func(sk *skill.Skill) { sk.StatementDigest[0] ^= 1 }},
		{"changed data", func(sk *skill.Skill) { sk.Files[0].Data[0] ^= 1 }},
		{"missing file", func(sk *skill.Skill) { sk.Files = sk.Files[1:] }},
		{"renamed file", func(sk *skill.Skill) { sk.Files[0].Path = "../escape" }},
		{"traversal in statement", func(sk *skill.Skill) {
			sk.Statement.Files[0].Path = "../escape"
			sk.Files[0].Path = "../escape"
			b, _ := sk.Statement.Marshal()
			sk.StatementDigest = skill.Digest(sha256Sum(b))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sk := buildSkill(t, variant{})
			tt.tamper(sk)
			root := newRoot(t)
			_, err := Install(root, sk)
			wantReason(t, err, ReasonInvalid)
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), ".") {
					t.Errorf("refused install left %s", e.Name())
				}
			}
		})
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	sk := buildSkill(t, variant{})
	root := newRoot(t)
	mustInstall(t, root, sk)
	for _, n := range []string{stagingPrefix + "A", trashPrefix + "B"} {
		if err := os.MkdirAll(filepath.Join(root, n, "modules"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, n, "modules", "x.wasm"), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Clean(root)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Clean = %v, %v; want 2 removed", removed, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != sk.StatementDigest.Hex() {
		t.Fatalf("after Clean the root holds %v", entries)
	}
	if _, err := Load(root, sk.StatementDigest); err != nil {
		t.Fatalf("Clean damaged the install: %v", err)
	}
}
