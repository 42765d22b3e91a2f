//go:build linux

package verifier

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// Skill sources in testdata/skills.
const (
	helloDir = "../testdata/skills/hello"
	notesDir = "../testdata/skills/notes"
)

// testKey returns a real Ed25519 key derived from label, the same in every
// run.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("stockade verifier test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

var (
	keyA = testKey("publisher A")
	keyB = testKey("publisher B")
)

func fp(k ed25519.PrivateKey) string {
	return string(skill.FingerprintOf(k.Public().(ed25519.PublicKey)))
}

// variant is a release built from a testdata source with skill.toml's
// lines rewritten.
type variant struct {
	src    string             // source directory; helloDir if ""
	key    ed25519.PrivateKey // keyA if nil
	set    map[string]string  // skill.toml key → new value (whole line)
	module []byte             // replaces the tool's module if set
}

// built is a signed archive on disk.
type built struct {
	archive, sig string // paths
	digest       string // statement digest
	sk           *skill.Skill
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// build makes v's archive and .sig with skill.Build, as a publisher would.
func build(t testing.TB, v variant) built {
	t.Helper()
	if v.src == "" {
		v.src = helloDir
	}
	if v.key == nil {
		v.key = keyA
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	copyTree(t, v.src, src)
	manifest := filepath.Join(src, "skill.toml")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range v.set {
		re := regexp.MustCompile(`(?m)^` + key + `\s*=.*$`)
		if !re.Match(b) {
			t.Fatalf("skill.toml has no %s line", key)
		}
		b = re.ReplaceAll(b, []byte(key+" = "+value))
	}
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if v.module != nil {
		mods, _ := filepath.Glob(filepath.Join(src, "modules", "*.wasm"))
		if len(mods) != 1 {
			t.Fatalf("%d modules in %s", len(mods), v.src)
		}
		if err := os.WriteFile(mods[0], v.module, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive, sig, err := skill.Build(src, v.key)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := skill.Open(archive, sig, func(skill.Fingerprint) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	out := built{archive: filepath.Join(dir, "x.skill"), sig: filepath.Join(dir, "x.skill.sig"), digest: sk.StatementDigest.String(), sk: sk}
	if err := os.WriteFile(out.archive, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out.sig, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// env is a running verifier: its state directory, admin.sock (a real Unix
// socket) and a broker link (a socketpair, as the supervisor makes).
type env struct {
	t      testing.TB
	state  string
	sock   string
	srv    *Server
	ctx    context.Context
	links  sync.WaitGroup
	link   *ipc.Conn
	linkID uint64
	stop   func()
}

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	state, err := os.MkdirTemp("", "stkv-state")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	return startEnv(t, state, cfg)
}

// startEnv starts a verifier on an existing state directory.
func startEnv(t testing.TB, state string, cfg Config) *env {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "stkv-sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "admin.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = state
	if cfg.AdminUIDs == nil {
		cfg.AdminUIDs = []uint32{uint32(os.Getuid())}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	srv, err := New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 1)
	go func() { _ = srv.ServeAdmin(ctx, ln); done <- struct{}{} }()
	e := &env{t: t, state: state, sock: sock, srv: srv, ctx: ctx}
	e.link = e.newLink()
	var stopped bool
	e.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		e.links.Wait()
		srv.Close()
	}
	t.Cleanup(e.stop)
	return e
}

// newLink joins a new broker link to the verifier, as the supervisor does.
func (e *env) newLink() *ipc.Conn {
	e.t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "broker"), os.NewFile(uintptr(fds[1]), "verifier")
	e.links.Add(1)
	go func() { defer e.links.Done(); e.srv.ServeLink(e.ctx, theirs) }()
	nc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		e.t.Fatal(err)
	}
	link, err := ipc.NewConn(nc.(*net.UnixConn))
	if err != nil {
		e.t.Fatal(err)
	}
	link.SetReadMax(ipc.ResolveFrameMax)
	link.SetAcceptFiles(true)
	if _, err := link.Handshake(ipc.ChannelVerifier, "test-broker"); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { link.Close() })
	return link
}

// admin dials admin.sock.
func (e *env) admin() *admin.Client {
	e.t.Helper()
	c, err := admin.Dial(e.sock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// install installs b through admin.sock, passing the files by descriptor.
func (e *env) install(c *admin.Client, b built) (admin.Release, error) {
	e.t.Helper()
	af, err := os.Open(b.archive)
	if err != nil {
		e.t.Fatal(err)
	}
	defer af.Close()
	sf, err := os.Open(b.sig)
	if err != nil {
		e.t.Fatal(err)
	}
	defer sf.Close()
	return c.Install(af, sf)
}

// mustInstall installs and promotes b.
func (e *env) mustActivate(c *admin.Client, b built) admin.Release {
	e.t.Helper()
	r, err := e.install(c, b)
	if err != nil {
		e.t.Fatalf("install: %v", err)
	}
	if r.State == admin.StateActive {
		return r
	}
	r, err = c.Promote(string(b.sk.Statement.ID), b.sk.Statement.Version.String(), b.digest)
	if err != nil {
		e.t.Fatalf("promote: %v", err)
	}
	if r.State != admin.StateActive {
		e.t.Fatalf("promoted release is %s", r.State)
	}
	return r
}

// resolvedSkill is what resolve returned, with the modules' bytes read from
// their sealed memfds.
type resolvedSkill struct {
	ipc.Resolved
	modules [][]byte
}

// resolve asks the verifier over the broker link, as the broker does.
func (e *env) resolve(id, version string) (resolvedSkill, error) {
	e.linkID++
	return resolveOn(e.link, e.linkID, id, version)
}

func resolveOn(link *ipc.Conn, reqID uint64, id, version string) (resolvedSkill, error) {
	var r resolvedSkill
	files, err := link.CallFiles(reqID, ipc.KindResolve, ipc.ResolveRequest{ID: id, Version: version},
		ipc.ControlFrameMax, nil, &r.Resolved, ipc.WriteTimeout)
	if err != nil {
		return r, err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if len(files) != len(r.Modules) {
		return r, errors.New("descriptor count differs from module count")
	}
	for i, m := range r.Modules {
		d, err := skill.ParseDigest(m.SHA256)
		if err != nil {
			return r, err
		}
		data, err := ipc.ReadSealed(files[i], m.Size, d)
		if err != nil {
			return r, err
		}
		r.modules = append(r.modules, data)
	}
	return r, nil
}

// installedFile is the path of a file of an installed release.
func (e *env) installedFile(digest, path string) string {
	return filepath.Join(e.state, SkillsDir, digest[len("sha256:"):], filepath.FromSlash(path))
}

// reasonIs fails unless err is an admin or ipc refusal with reason want.
func reasonIs(t *testing.T, err error, want ipc.Reason) {
	t.Helper()
	var ie *ipc.Error
	var ae *admin.Error
	switch {
	case errors.As(err, &ae):
		if ae.Reason != want {
			t.Fatalf("reason %s, want %s (%v)", ae.Reason, want, err)
		}
	case errors.As(err, &ie):
		if ie.Reason != want {
			t.Fatalf("reason %q, want %s (%v)", ie.Reason, want, err)
		}
	default:
		t.Fatalf("got %v, want a refusal with reason %s", err, want)
	}
}
