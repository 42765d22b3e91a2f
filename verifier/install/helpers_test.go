package install

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// helloDir is the tiny test skill of verifier/skill.
const helloDir = "../../testdata/skills/hello"

// testKey returns a real Ed25519 key, the same in every run.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("stockade verifier/install test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// variant is a release of the hello skill: its sequence (and version
// 1.0.<seq>), and the size of an extra asset of pseudo-random bytes, to
// make installs slow enough to be killed in the middle.
type variant struct {
	seq      int
	bigAsset int
}

// buildArchive copies the hello skill to a temporary directory, rewrites
// it as v says, and builds and signs it with skill.Build.
func buildArchive(t testing.TB, v variant) (archive, envelope []byte) {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(helloDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(helloDir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "skill.toml")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	set := func(key, value string) {
		re := regexp.MustCompile(`(?m)^` + key + `\s*=.*$`)
		if !re.Match(b) {
			t.Fatalf("skill.toml has no %s line", key)
		}
		b = re.ReplaceAll(b, []byte(key+" = "+value))
	}
	if v.seq > 0 {
		set("version", fmt.Sprintf(`"1.0.%d"`, v.seq))
		set("sequence", fmt.Sprint(v.seq))
	}
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if v.bigAsset > 0 {
		// Incompressible bytes, so the archive keeps the ratio limit.
		data := make([]byte, 0, v.bigAsset+sha256.Size)
		h := sha256.Sum256([]byte(fmt.Sprint("asset", v.seq)))
		for len(data) < v.bigAsset {
			data = append(data, h[:]...)
			h = sha256.Sum256(h[:])
		}
		if err := os.MkdirAll(filepath.Join(dir, "assets", "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "assets", "data", "big.bin"), data[:v.bigAsset], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive, envelope, err = skill.Build(dir, testKey("publisher"))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return archive, envelope
}

func openSkill(t testing.TB, archive, envelope []byte) *skill.Skill {
	t.Helper()
	sk, err := skill.Open(archive, envelope, func(skill.Fingerprint) error { return nil })
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return sk
}

func buildSkill(t testing.TB, v variant) *skill.Skill {
	t.Helper()
	archive, envelope := buildArchive(t, v)
	return openSkill(t, archive, envelope)
}

// newRoot returns a fresh root directory path (not yet created).
func newRoot(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "skills")
}

func mustInstall(t testing.TB, root string, sk *skill.Skill) string {
	t.Helper()
	dir, err := Install(root, sk)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	return dir
}

func wantReason(t testing.TB, err error, want Reason) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want reason %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != want {
		t.Fatalf("error %v is not an *install.Error with reason %s", err, want)
	}
}

// sameFiles fails unless got holds exactly sk's files, byte for byte.
func sameFiles(t testing.TB, got *Skill, sk *skill.Skill) {
	t.Helper()
	if got.StatementDigest != sk.StatementDigest {
		t.Fatalf("digest %s, want %s", got.StatementDigest, sk.StatementDigest)
	}
	if len(got.Files) != len(sk.Files) {
		t.Fatalf("%d files, want %d", len(got.Files), len(sk.Files))
	}
	for i, f := range sk.Files {
		g := got.Files[i]
		if g.Path != f.Path || g.Size != f.Size || g.SHA256 != f.SHA256 || string(g.Data) != string(f.Data) {
			t.Fatalf("file %d: got %s (%d bytes), want %s (%d bytes)", i, g.Path, len(g.Data), f.Path, len(f.Data))
		}
	}
}

func sha256Sum(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }
