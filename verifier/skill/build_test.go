package skill

import (
	"archive/zip"
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// copyHello writes the hello skill's files into a new directory, in the
// order given, and returns it.
func copyHello(t *testing.T, order []string, perm os.FileMode, mtime time.Time) string {
	t.Helper()
	files := helloFiles(t)
	dir := t.TempDir()
	for _, p := range order {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, files[p], perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dst, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBuildDeterministic builds the same files twice, and again from a copy
// written in another order with other times and modes and an extra empty
// directory: the archives (and, with the same key, the envelopes) are
// byte-identical.
func TestBuildDeterministic(t *testing.T) {
	t.Parallel()
	a1, e1 := buildHello(t)
	a2, e2 := buildHello(t)
	if !bytes.Equal(a1, a2) || !bytes.Equal(e1, e2) {
		t.Fatal("two builds of the same directory differ")
	}
	paths := slices.Sorted(maps.Keys(helloFiles(t)))
	slices.Reverse(paths)
	dir := copyHello(t, paths, 0o600, time.Date(2031, 7, 4, 12, 0, 0, 0, time.UTC))
	if err := os.Mkdir(filepath.Join(dir, "assets", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	a3, e3, err := Build(dir, publisherKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a1, a3) || !bytes.Equal(e1, e3) {
		t.Fatal("a copy with other order, times and modes builds differently")
	}
	a4, e4, err := Build(dir, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a1, a4) || bytes.Equal(e1, e4) {
		t.Fatal("the archive should not depend on the key, the envelope should")
	}

	// What makes it deterministic, checked in the archive itself.
	zr, err := zip.NewReader(bytes.NewReader(a1), int64(len(a1)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Mode() != 0o644 || f.ModifiedDate != buildDOSDate || f.ModifiedTime != 0 || len(f.Extra) != 0 || f.Flags != 0 {
			t.Errorf("%s: mode %v, date %#x, time %#x, extra %d bytes, flags %#x", f.Name, f.Mode(), f.ModifiedDate, f.ModifiedTime, len(f.Extra), f.Flags)
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			t.Errorf("%s: method %d", f.Name, f.Method)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %q", names)
	}
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	order := []string{ManifestPath, "modules/hello.wasm"}
	for _, c := range []struct {
		name   string
		setup  func(t *testing.T, dir string)
		reason Reason
	}{
		{"symlink", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "assets", "passwd")); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, ReasonNotRegular},
		{"hidden file", func(t *testing.T, dir string) { write(t, dir, "assets/.DS_Store", "x") }, ReasonPathInvalid},
		{"hidden directory", func(t *testing.T, dir string) { write(t, dir, ".git/HEAD", "x") }, ReasonPathInvalid},
		{"file outside the layout", func(t *testing.T, dir string) { write(t, dir, "README.md", "x") }, ReasonPathLayout},
		{"nested module", func(t *testing.T, dir string) { write(t, dir, "modules/sub/x.wasm", "x") }, ReasonPathLayout},
		{"module without .wasm", func(t *testing.T, dir string) { write(t, dir, "modules/x.so", "x") }, ReasonPathLayout},
		{"space in a name", func(t *testing.T, dir string) { write(t, dir, "assets/a b.txt", "x") }, ReasonPathInvalid},
		{"no manifest", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestPath)) }, ReasonStatementFiles},
		{"bad manifest", func(t *testing.T, dir string) { write(t, dir, ManifestPath, "id = \"Stockade.Hello\"\n") }, ReasonID},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyHello(t, order, 0o644, time.Now())
			os.MkdirAll(filepath.Join(dir, "assets"), 0o755)
			c.setup(t, dir)
			_, _, err := Build(dir, publisherKey)
			wantReason(t, err, c.reason)
		})
	}
	if _, _, err := Build(helloDir, publisherKey[:32]); ReasonOf(err) != ReasonKeyLength {
		t.Errorf("short private key: %v", err)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
