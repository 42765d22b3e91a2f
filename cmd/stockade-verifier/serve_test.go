//go:build linux

package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/verifier"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// The serve tests run the real `stockade-verifier serve` the way stockaded
// does: admin.sock's listener as fd 3, a SOCK_SEQPACKET handoff channel as
// fd 4, a state directory of mode 0700, the verifier confining itself
// (Landlock, seccomp) once its state is open.

var (
	serveBinOnce sync.Once
	serveBinPath string
	serveBinErr  error
)

// serveBinary builds stockade-verifier once per test run.
func serveBinary(t *testing.T) string {
	t.Helper()
	serveBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stkv-serve-bin-")
		if err != nil {
			serveBinErr = err
			return
		}
		serveBinPath = filepath.Join(dir, "stockade-verifier")
		out, err := exec.Command("go", "build", "-o", serveBinPath, ".").CombinedOutput()
		if err != nil {
			serveBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serveBinErr != nil {
		t.Fatal(serveBinErr)
	}
	return serveBinPath
}

// serveHarness holds what a supervisor holds: the listening admin.sock and
// the state directory, across restarts of the verifier.
type serveHarness struct {
	t     *testing.T
	bin   string
	state string
	sock  string
	ln    *os.File // the listener, handed to each verifier as fd 3
	proc  *exec.Cmd
	hand  *os.File // our end of the current handoff channel
	logs  bytes.Buffer
}

func newServeHarness(t *testing.T) *serveHarness {
	t.Helper()
	bin := serveBinary(t)
	state, err := os.MkdirTemp("", "stkv-serve-state-")
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "stkv-serve-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state); os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "admin.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	lf, err := ln.File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := &serveHarness{t: t, bin: bin, state: state, sock: sock, ln: lf}
	t.Cleanup(func() {
		h.kill()
		lf.Close()
		if t.Failed() {
			t.Logf("verifier logs:\n%s", h.logs.String())
		}
	})
	return h
}

// start starts a verifier and waits until admin.sock answers.
func (h *serveHarness) start() {
	h.t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "handoff"), os.NewFile(uintptr(fds[1]), "handoff-verifier")
	cmd := exec.Command(h.bin, "serve", "--state-dir", h.state, "--admin-uid", strconv.Itoa(os.Getuid()))
	cmd.ExtraFiles = []*os.File{h.ln, theirs}
	cmd.Stdout, cmd.Stderr = &h.logs, &h.logs
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	theirs.Close()
	h.proc, h.hand = cmd, ours
	for i := 0; ; i++ {
		c, err := admin.Dial(h.sock)
		if err == nil {
			_, err = c.Status()
			c.Close()
			if err == nil {
				return
			}
		}
		if i == 2000 || h.exited() {
			h.t.Fatalf("the verifier did not come up: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *serveHarness) exited() bool {
	var ws unix.WaitStatus
	pid, _ := unix.Wait4(h.proc.Process.Pid, &ws, unix.WNOHANG, nil)
	return pid == h.proc.Process.Pid
}

// kill SIGKILLs the verifier and reaps it.
func (h *serveHarness) kill() {
	if h.proc == nil {
		return
	}
	h.proc.Process.Signal(syscall.SIGKILL)
	h.proc.Wait()
	h.hand.Close()
	h.proc = nil
}

// stop ends the verifier with SIGTERM, as the supervisor does.
func (h *serveHarness) stop() {
	h.t.Helper()
	h.proc.Process.Signal(syscall.SIGTERM)
	if err := h.proc.Wait(); err != nil {
		h.t.Fatalf("the verifier exited with %v", err)
	}
	h.hand.Close()
	h.proc = nil
}

func (h *serveHarness) client() *admin.Client {
	h.t.Helper()
	c, err := admin.Dial(h.sock)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// serveKey returns a real Ed25519 key derived from label.
func serveKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("stockade serve test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// serveRelease builds testdata/skills/hello at sequence seq, with a module
// of size bytes (the real one when size is 0; otherwise the WASM header and
// random bytes, which install and quarantine audit_failed), and writes the
// archive and its .sig into dir.
func serveRelease(t *testing.T, dir string, seq, size int, key ed25519.PrivateKey) (archive, sig string) {
	t.Helper()
	src := filepath.Join(dir, fmt.Sprintf("src-%d", seq))
	hello := filepath.Join("..", "..", "testdata", "skills", "hello")
	err := filepath.WalkDir(hello, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(hello, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(src, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(src, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(src, "skill.toml")
	b, _ := os.ReadFile(mf)
	b = regexp.MustCompile(`(?m)^sequence\s*=.*$`).ReplaceAll(b, []byte("sequence = "+strconv.Itoa(seq)))
	b = regexp.MustCompile(`(?m)^version\s*=.*$`).ReplaceAll(b, []byte(fmt.Sprintf(`version = "1.0.%d"`, seq)))
	if err := os.WriteFile(mf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if size > 0 {
		m := make([]byte, size)
		r := rand.New(rand.NewPCG(uint64(seq), 7))
		for i := range m {
			m[i] = byte(r.Uint32())
		}
		copy(m, "\x00asm\x01\x00\x00\x00")
		if err := os.WriteFile(filepath.Join(src, "modules", "hello.wasm"), m, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, s, err := skill.Build(src, key)
	if err != nil {
		t.Fatal(err)
	}
	archive, sig = filepath.Join(dir, fmt.Sprintf("hello-%d.skill", seq)), filepath.Join(dir, fmt.Sprintf("hello-%d.skill.sig", seq))
	if err := os.WriteFile(archive, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sig, s, 0o644); err != nil {
		t.Fatal(err)
	}
	return archive, sig
}

func installFiles(c *admin.Client, archive, sig string) (admin.Release, error) {
	af, err := os.Open(archive)
	if err != nil {
		return admin.Release{}, err
	}
	defer af.Close()
	sf, err := os.Open(sig)
	if err != nil {
		return admin.Release{}, err
	}
	defer sf.Close()
	return c.Install(af, sf)
}

// checkConsistent asks doctor, and looks at the skills directory itself:
// no staging or trash directory, and every release directory is one the
// store holds, whole.
func (h *serveHarness) checkConsistent(when string) []admin.Release {
	h.t.Helper()
	c := h.client()
	defer c.Close()
	d, err := c.Doctor()
	if err != nil || !d.OK {
		h.t.Fatalf("%s: doctor: %+v %v", when, d, err)
	}
	list, err := c.List()
	if err != nil {
		h.t.Fatalf("%s: list: %v", when, err)
	}
	held := map[string]bool{}
	for _, r := range list {
		held[r.Digest[len("sha256:"):]] = true
	}
	for _, r := range d.Releases {
		if r.Files != admin.FilesVerified {
			h.t.Fatalf("%s: %+v", when, r)
		}
	}
	entries, err := os.ReadDir(filepath.Join(h.state, verifier.SkillsDir))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range entries {
		if !held[e.Name()] {
			h.t.Fatalf("%s: %s in the skills directory is not a release the store holds", when, e.Name())
		}
	}
	return list
}

// TestServeInstallAndRestart: a verifier started as stockaded starts it
// installs a skill through admin.sock, keeps it across a clean restart, and
// resolves nothing it should not.
func TestServeInstallAndRestart(t *testing.T) {
	h := newServeHarness(t)
	h.start()
	dir := t.TempDir()
	key := serveKey("publisher")
	a, s := serveRelease(t, dir, 1, 0, key)
	c := h.client()
	r, err := installFiles(c, a, s)
	if err != nil || r.State != admin.StateQuarantined || r.Audit == nil || !r.Audit.OK {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := c.Promote(r.ID, r.Version, r.Digest); err != nil {
		t.Fatal(err)
	}
	c.Close()
	h.stop()
	h.start()
	list := h.checkConsistent("after a restart")
	if len(list) != 1 || list[0].State != admin.StateActive {
		t.Fatalf("%+v", list)
	}
}

// TestServeKilledDuringInstall SIGKILLs the verifier at random moments of
// installs (releases of random sizes, so that the kill lands in hashing,
// auditing, writing, fsyncing, renaming or the trust store's commit),
// restarts it each time and requires the store to open, doctor to be clean
// and no half-installed release to exist. Then a last install must work.
func TestServeKilledDuringInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the verifier many times")
	}
	h := newServeHarness(t)
	h.start()
	dir := t.TempDir()
	key := serveKey("publisher")
	rng := rand.New(rand.NewPCG(1, 2))
	const rounds = 40
	type release struct{ archive, sig string }
	releases := make([]release, rounds+1)
	for i := range releases {
		size := 0
		if i%3 != 0 {
			size = (1 + rng.IntN(24)) << 16 // 64 KiB to 1.5 MiB
		}
		releases[i].archive, releases[i].sig = serveRelease(t, dir, i+1, size, key)
	}
	// How long an install takes here, to spread the kills over it.
	probe, probeSig := serveRelease(t, dir, 1000, 1<<20, serveKey("probe"))
	c0 := h.client()
	began := time.Now()
	if _, err := installFiles(c0, probe, probeSig); err != nil {
		t.Fatal(err)
	}
	span := time.Since(began) * 3 / 2
	c0.Close()
	interrupted := 0
	for i := range rounds {
		c := h.client()
		done := make(chan error, 1)
		go func() {
			_, err := installFiles(c, releases[i].archive, releases[i].sig)
			done <- err
		}()
		time.Sleep(time.Duration(rng.Int64N(int64(span))))
		h.kill()
		if err := <-done; err != nil {
			interrupted++
		}
		c.Close()
		h.start()
		h.checkConsistent(fmt.Sprintf("round %d", i))
	}
	t.Logf("%d of %d installs interrupted (kills spread over %v)", interrupted, rounds, span)
	c := h.client()
	defer c.Close()
	last := releases[rounds]
	if r, err := installFiles(c, last.archive, last.sig); err != nil {
		t.Fatalf("install after the crashes: %+v %v", r, err)
	}
	h.checkConsistent("at the end")
}
