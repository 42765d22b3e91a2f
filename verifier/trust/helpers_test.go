package trust

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// helloDir is the tiny test skill of verifier/skill.
const helloDir = "../../testdata/skills/hello"

// testKey returns a real Ed25519 key derived from label, the same in every
// run.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("stockade verifier/trust test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

var (
	ownerKey    = testKey("owner")
	strangerKey = testKey("stranger")
)

func fingerprint(k ed25519.PrivateKey) skill.Fingerprint {
	return skill.FingerprintOf(k.Public().(ed25519.PublicKey))
}

// release describes a variant of the hello skill.
type release struct {
	key      ed25519.PrivateKey
	id       string
	version  string
	sequence string
	http     string // the capabilities' http line's value
	desc     string // changes the archive without changing the capabilities
}

// build copies the hello skill to a temporary directory, rewrites its
// skill.toml as rel says, builds and signs the archive with skill.Build,
// and opens it with skill.Open, as the verifier would.
func build(t testing.TB, rel release) *skill.Skill {
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
	if rel.id != "" {
		set("id", `"`+rel.id+`"`)
	}
	if rel.version != "" {
		set("version", `"`+rel.version+`"`)
	}
	if rel.sequence != "" {
		set("sequence", rel.sequence)
	}
	if rel.http != "" {
		set("http", rel.http)
	}
	if rel.desc != "" {
		set("description", `"`+rel.desc+`"`)
	}
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	key := rel.key
	if key == nil {
		key = ownerKey
	}
	archive, envelope, err := skill.Build(dir, key)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	sk, err := skill.Open(archive, envelope, func(skill.Fingerprint) error { return nil })
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return sk
}

// fixedClock returns a clock that moves a second per call.
func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixedClock()
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "trust")
	return openStore(t, dir, opts), dir
}

func mustAdmit(t testing.TB, s *Store, sk *skill.Skill, problems ...string) Release {
	t.Helper()
	r, err := s.Admit(sk, problems)
	if err != nil {
		t.Fatalf("Admit %s@%s: %v", sk.Statement.ID, sk.Statement.Version, err)
	}
	return r
}

func mustPromote(t testing.TB, s *Store, sk *skill.Skill) {
	t.Helper()
	if err := s.Promote(string(sk.Statement.ID), sk.Statement.Version.String(), sk.StatementDigest); err != nil {
		t.Fatalf("Promote: %v", err)
	}
}

func wantReason(t testing.TB, err error, want Reason) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want reason %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != want {
		t.Fatalf("error %v is not a *trust.Error with reason %s", err, want)
	}
}

func wantState(t testing.TB, s *Store, sk *skill.Skill, want State, reasons ...Reason) Release {
	t.Helper()
	for _, r := range s.List() {
		if r.Digest == sk.StatementDigest {
			if r.State != want {
				t.Fatalf("%s@%s: state %s, want %s", r.ID, r.Version, r.State, want)
			}
			if reasons != nil && !equalReasons(r.Reasons, reasons) {
				t.Fatalf("%s@%s: reasons %v, want %v", r.ID, r.Version, r.Reasons, reasons)
			}
			return r
		}
	}
	t.Fatalf("release %s not in the store", sk.StatementDigest)
	return Release{}
}

func equalReasons(a, b []Reason) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
