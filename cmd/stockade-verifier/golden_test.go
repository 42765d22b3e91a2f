package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// The golden tests run the real stockade-verifier binary (built once into
// a temporary directory) on real archives built from testdata/skills and
// testdata/cli/skills, and compare its stdout, stderr and exit code with
// testdata/cli/<name>.golden. Regenerate the files with
//
//	go test ./cmd/stockade-verifier -run TestGolden -update
//
// and review the diff: a changed golden is a changed contract. The
// working directory's path is replaced by $WORK; times, pids and (for
// keygen) random fingerprints are masked where a case says so. Archive
// digests depend on compress/flate's output, so a new Go release may
// change them (skill.Build says so too).

var update = flag.Bool("update", false, "rewrite the golden files in testdata/cli")

const (
	helloSrc     = "../../testdata/skills/hello"
	badAuditSrc  = "../../testdata/cli/skills/bad-audit"
	goldenDir    = "../../testdata/cli"
	testPassword = "correct horse battery staple"
)

var (
	publisherKey = testKey("publisher")
	otherKey     = testKey("other")
	newKey2      = testKey("new")
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// verifierBinary builds the command once per test run.
func verifierBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stockade-verifier-bin-")
		if err != nil {
			binErr = err
			return
		}
		if err := os.Chmod(dir, 0o755); err != nil { // other uids run it too (denied test)
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "stockade-verifier")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// workspace is a working directory with keys and archives in it.
type workspace struct {
	t   *testing.T
	dir string
}

// newWorkspace makes a directory (short path: sockets live in it) holding
//
//	pub.key        the publisher key, unencrypted
//	pub-enc.key    the same key, encrypted under testPassword
//	other.key      another key, unencrypted
//	new.key        a third key (rotation target), unencrypted
//	world.key      pub.key with mode 0644
//	hello.skill    testdata/skills/hello by pub.key (+ .sig)
func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	dir, err := os.MkdirTemp("", "sv-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &workspace{t: t, dir: dir}
	w.key("pub.key", publisherKey, nil, 0o600)
	w.key("pub-enc.key", publisherKey, []byte(testPassword), 0o600)
	w.key("other.key", otherKey, nil, 0o600)
	w.key("new.key", newKey2, nil, 0o600)
	w.key("world.key", publisherKey, nil, 0o644)
	w.build("hello.skill", helloSrc, publisherKey)
	return w
}

func (w *workspace) path(name string) string { return filepath.Join(w.dir, name) }

// keyFiles caches key files (deterministic: zeros for salt and nonce),
// so that each workspace does not pay PBKDF2 again.
var keyFiles sync.Map

func (w *workspace) key(name string, key ed25519.PrivateKey, pass []byte, mode os.FileMode) {
	w.t.Helper()
	id := string(key.Seed()) + "\x00" + string(pass)
	data, ok := keyFiles.Load(id)
	if !ok {
		b, err := marshalKeyFile(key, pass, zeros{})
		if err != nil {
			w.t.Fatal(err)
		}
		data, _ = keyFiles.LoadOrStore(id, b)
	}
	w.write(name, data.([]byte), mode)
}

func (w *workspace) write(name string, data []byte, mode os.FileMode) {
	w.t.Helper()
	if err := os.WriteFile(w.path(name), data, mode); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chmod(w.path(name), mode); err != nil {
		w.t.Fatal(err)
	}
}

func (w *workspace) read(name string) []byte {
	w.t.Helper()
	b, err := os.ReadFile(w.path(name))
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// build builds src with key into name and name.sig.
func (w *workspace) build(name, src string, key ed25519.PrivateKey) {
	w.t.Helper()
	archive, env, err := skill.Build(src, key)
	if err != nil {
		w.t.Fatalf("Build %s: %v", src, err)
	}
	w.write(name, archive, 0o644)
	w.write(name+".sig", env, 0o644)
}

// variant copies src into the workspace with skill.toml's version and
// sequence replaced and, if greeting is set, another assets/greeting.txt,
// and builds it with key into name.
func (w *workspace) variant(name, src, version string, sequence int, greeting string, key ed25519.PrivateKey) {
	w.t.Helper()
	dst := w.path("src-" + name)
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
		switch rel {
		case "skill.toml":
			s := regexp.MustCompile(`(?m)^version *= *".*"$`).ReplaceAllString(string(b), `version = "`+version+`"`)
			s = regexp.MustCompile(`(?m)^sequence *= *\d+$`).ReplaceAllString(s, fmt.Sprintf("sequence = %d", sequence))
			b = []byte(s)
		case filepath.Join("assets", "greeting.txt"):
			if greeting != "" {
				b = []byte(greeting)
			}
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.build(name, dst, key)
}

// resign replaces archive's signature with one by key over a statement
// that is the original's with the archive's current size and digest: what
// a publisher (or a thief of its key) would sign for modified bytes.
func (w *workspace) resign(name string, key ed25519.PrivateKey) {
	w.t.Helper()
	archive := w.read(name)
	env, err := skill.ParseEnvelope(w.read(name + ".sig"))
	if err != nil {
		w.t.Fatal(err)
	}
	st, err := skill.ParseStatement(env.Payload)
	if err != nil {
		w.t.Fatal(err)
	}
	st.Archive = skill.FileDigest{Size: int64(len(archive)), SHA256: sha256.Sum256(archive)}
	payload, err := st.Marshal()
	if err != nil {
		w.t.Fatal(err)
	}
	signed, err := skill.Sign(skill.PayloadType, payload, key)
	if err != nil {
		w.t.Fatal(err)
	}
	b, err := signed.Marshal()
	if err != nil {
		w.t.Fatal(err)
	}
	w.write(name+".sig", b, 0o644)
}

// copyArchive copies name and its .sig to to.
func (w *workspace) copyArchive(name, to string) {
	w.write(to, w.read(name), 0o644)
	w.write(to+".sig", w.read(name+".sig"), 0o644)
}

// storedEntry finds a stored entry's data in a skill archive (local
// headers without extra fields, as Build writes them) and the offsets of
// its CRC-32 in the local header and the central record.
func storedEntry(t *testing.T, archive []byte, name string) (data []byte, localCRC, centralCRC int) {
	t.Helper()
	le := binary.LittleEndian
	for off := 0; off+30 <= len(archive) && le.Uint32(archive[off:]) == 0x04034b50; {
		method := le.Uint16(archive[off+8:])
		csize := int(le.Uint32(archive[off+18:]))
		nlen := int(le.Uint16(archive[off+26:]))
		start := off + 30 + nlen
		if string(archive[off+30:start]) == name {
			if method != 0 {
				t.Fatalf("%s is not stored", name)
			}
			data, localCRC = archive[start:start+csize], off+14
			break
		}
		off = start + csize
	}
	c := bytes.Index(archive, []byte("PK\x01\x02"))
	for c >= 0 && c+46 <= len(archive) {
		nlen := int(le.Uint16(archive[c+28:]))
		if string(archive[c+46:c+46+nlen]) == name {
			centralCRC = c + 16
			break
		}
		next := bytes.Index(archive[c+4:], []byte("PK\x01\x02"))
		if next < 0 {
			break
		}
		c += 4 + next
	}
	if data == nil || centralCRC == 0 {
		t.Fatalf("entry %s not found", name)
	}
	return data, localCRC, centralCRC
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary in the workspace with a clean environment and no
// controlling terminal (so nothing can prompt).
func (w *workspace) run(env []string, args ...string) result {
	w.t.Helper()
	return w.runAs(nil, env, args...)
}

func (w *workspace) runAs(cred *syscall.Credential, env []string, args ...string) result {
	w.t.Helper()
	cmd := exec.Command(verifierBinary(w.t), args...)
	cmd.Dir = w.dir
	cmd.Env = append([]string{"HOME=" + w.dir, "XDG_RUNTIME_DIR=" + w.path("run"), "PATH=/usr/bin:/bin", "TMPDIR=" + w.dir}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			w.t.Fatalf("running %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{stdout.String(), stderr.String(), code}
}

// masks replace variable parts of an output.
var (
	maskFingerprint = mask{regexp.MustCompile(`ed25519:SHA256:[A-Za-z0-9_-]{43}`), "ed25519:SHA256:<random>"}
	maskPublicKey   = mask{regexp.MustCompile(`"public_key": "[A-Za-z0-9+/=]{44}"`), `"public_key": "<random>"`}
	maskTime        = mask{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"}
	maskPID         = mask{regexp.MustCompile(`("pid": |pid: +)\d+`), "${1}<pid>"}
	maskUptime      = mask{regexp.MustCompile(`("uptime_ms": |uptime: +)[0-9.a-zµ]+`), "${1}<uptime>"}
)

type mask struct {
	re   *regexp.Regexp
	with string
}

// check compares r with testdata/cli/<name>.golden (or writes it).
func (w *workspace) check(name string, r result, args []string, masks ...mask) {
	w.t.Helper()
	norm := func(s string) string {
		s = strings.ReplaceAll(s, helloAbs(), "$HELLO")
		s = strings.ReplaceAll(s, w.dir, "$WORK")
		for _, m := range masks {
			s = m.re.ReplaceAllString(s, m.with)
		}
		return s
	}
	o := outcome(r.code)
	got := fmt.Sprintf("# %s\nexit %d (%s)\n--- stdout\n%s--- stderr\n%s",
		norm(strings.Join(append([]string{"stockade-verifier"}, quoteArgs(args)...), " ")), r.code, o, norm(r.stdout), norm(r.stderr))
	path := filepath.Join(goldenDir, name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatalf("%v (regenerate with -update)", err)
	}
	if got != string(want) {
		w.t.Errorf("%s: output differs from %s (regenerate with -update and review)\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$\x1b") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return out
}

// goldenCase is one offline command.
type goldenCase struct {
	name  string
	env   []string
	args  []string
	code  outcome
	masks []mask
	setup func(w *workspace)
}

// TestGoldenOffline runs the commands that need no daemon.
func TestGoldenOffline(t *testing.T) {
	t.Parallel()
	pass := []string{passphraseEnv + "=" + testPassword}
	cases := []goldenCase{
		{name: "help", args: []string{"help"}, code: outOK},
		{name: "no-command", args: nil, code: outUsage},
		{name: "unknown-command", args: []string{"frobnicate"}, code: outUsage},
		{name: "unknown-flag", args: []string{"package", "verify", "--frob", "hello.skill"}, code: outUsage},
		{name: "command-help", args: []string{"package", "build", "-h"}, code: outOK},

		{name: "keygen-unencrypted", args: []string{"keygen", "--unencrypted", "--out", "fresh.key"}, code: outOK, masks: []mask{maskFingerprint}},
		{name: "keygen-encrypted-json", env: pass, args: []string{"keygen", "--out", "fresh.key", "--json"}, code: outOK, masks: []mask{maskFingerprint, maskPublicKey}},
		{name: "keygen-no-passphrase", args: []string{"keygen", "--out", "fresh.key"}, code: outUsage},
		{name: "keygen-exists", args: []string{"keygen", "--unencrypted", "--out", "pub.key"}, code: outConflict},

		{name: "build", args: []string{"package", "build", helloAbs(), "--key", "pub.key", "--out", "dist"}, code: outOK},
		{name: "build-json", args: []string{"--json", "package", "build", helloAbs(), "--key", "pub.key", "--out", "dist"}, code: outOK},
		{name: "build-encrypted-key", env: pass, args: []string{"package", "build", helloAbs(), "--key", "pub-enc.key", "--out", "dist"}, code: outOK},
		{name: "build-wrong-passphrase", env: []string{passphraseEnv + "=Tr0ub4dor&3"}, args: []string{"package", "build", helloAbs(), "--key", "pub-enc.key"}, code: outInvalid},
		{name: "build-no-passphrase", args: []string{"package", "build", helloAbs(), "--key", "pub-enc.key"}, code: outUsage},
		{name: "build-key-world-readable", args: []string{"package", "build", helloAbs(), "--key", "world.key"}, code: outMalformed},
		{name: "build-no-key", args: []string{"package", "build", helloAbs()}, code: outUsage},
		{name: "build-missing-key", args: []string{"package", "build", helloAbs(), "--key", "nope.key"}, code: outNotFound},

		{name: "verify", args: []string{"package", "verify", "hello.skill"}, code: outOK},
		{name: "verify-json", args: []string{"package", "verify", "--json", "hello.skill"}, code: outOK},
		{name: "verify-explicit-sig", args: []string{"package", "verify", "copy.skill", "--sig", "hello.skill.sig"}, code: outOK,
			setup: func(w *workspace) { w.write("copy.skill", w.read("hello.skill"), 0o644) }},
		{name: "verify-missing-sig", args: []string{"package", "verify", "lonely.skill"}, code: outNotFound,
			setup: func(w *workspace) { w.write("lonely.skill", w.read("hello.skill"), 0o644) }},
		{name: "verify-tampered-archive", args: []string{"package", "verify", "t.skill"}, code: outInvalid,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				a := w.read("t.skill")
				data, _, _ := storedEntry(t, a, "modules/hello.wasm")
				data[len(data)-2] ^= 0x01 // i32.const 42 → 43
				w.write("t.skill", a, 0o644)
			}},
		{name: "verify-tampered-archive-json", args: []string{"--json", "package", "verify", "t.skill"}, code: outInvalid,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				a := w.read("t.skill")
				a[len(a)/2] ^= 0x80
				w.write("t.skill", a, 0o644)
			}},
		{name: "verify-truncated-archive", args: []string{"package", "verify", "t.skill"}, code: outInvalid,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				a := w.read("t.skill")
				w.write("t.skill", a[:len(a)-1], 0o644)
			}},
		{name: "verify-tampered-signature", args: []string{"package", "verify", "t.skill"}, code: outInvalid,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				w.write("t.skill.sig", flipAfter(w.read("t.skill.sig"), `"sig":"`), 0o644)
			}},
		{name: "verify-tampered-statement", args: []string{"package", "verify", "t.skill"}, code: outInvalid,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				w.write("t.skill.sig", flipAfter(w.read("t.skill.sig"), `"payload":"`), 0o644)
			}},
		{name: "verify-garbled-signature", args: []string{"package", "verify", "t.skill"}, code: outMalformed,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				s := w.read("t.skill.sig")
				w.write("t.skill.sig", s[:len(s)-1], 0o644)
			}},
		{name: "verify-other-skills-signature", args: []string{"package", "verify", "hello.skill", "--sig", "bad-audit.skill.sig"}, code: outInvalid,
			setup: func(w *workspace) { w.build("bad-audit.skill", badAuditSrc, publisherKey) }},
		// A module changed inside the archive, its CRC-32 fixed up and the
		// archive re-signed: the signed file list still catches it.
		{name: "verify-tampered-module-resigned", args: []string{"package", "verify", "t.skill"}, code: outMalformed,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				a := w.read("t.skill")
				data, lcrc, ccrc := storedEntry(t, a, "modules/hello.wasm")
				data[len(data)-2] ^= 0x01
				sum := crc32.ChecksumIEEE(data)
				binary.LittleEndian.PutUint32(a[lcrc:], sum)
				binary.LittleEndian.PutUint32(a[ccrc:], sum)
				w.write("t.skill", a, 0o644)
				w.resign("t.skill", publisherKey)
			}},
		// Signed, and hostile all the same.
		{name: "verify-prepended-data-resigned", args: []string{"package", "verify", "t.skill"}, code: outMalformed,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				w.write("t.skill", append([]byte("#!/bin/sh\nexit 0\n"), w.read("t.skill")...), 0o644)
				w.resign("t.skill", publisherKey)
			}},
		{name: "verify-escapes-names", args: []string{"package", "verify", "evil\x1b[2J\x1b]0;pwned\a.skill"}, code: outNotFound},
		{name: "verify-fifo", args: []string{"package", "verify", "fifo.skill"}, code: outUsage,
			setup: func(w *workspace) {
				if err := syscall.Mkfifo(w.path("fifo.skill"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},

		{name: "audit", args: []string{"audit", "hello.skill"}, code: outOK},
		{name: "audit-failed", args: []string{"audit", "bad-audit.skill"}, code: outAuditFailed,
			setup: func(w *workspace) { w.build("bad-audit.skill", badAuditSrc, publisherKey) }},
		{name: "audit-failed-json", args: []string{"audit", "--json", "bad-audit.skill"}, code: outAuditFailed,
			setup: func(w *workspace) { w.build("bad-audit.skill", badAuditSrc, publisherKey) }},
		{name: "audit-tampered", args: []string{"audit", "t.skill"}, code: outInvalid,
			setup: func(w *workspace) {
				w.copyArchive("hello.skill", "t.skill")
				a := w.read("t.skill")
				a[40] ^= 0x01
				w.write("t.skill", a, 0o644)
			}},

		{name: "rotate", args: []string{"trust", "rotate", "--old", "pub.key", "--new", "new.key", "--skill", "stockade.hello", "--out", "rotation.sig"}, code: outOK},
		{name: "rotate-all-json", args: []string{"trust", "rotate", "--json", "--old", "pub.key", "--new", "new.key", "--out", "rotation.sig"}, code: outOK},
		{name: "rotate-encrypted-keys", env: []string{oldPassphraseEnv + "=" + testPassword}, args: []string{"trust", "rotate", "--old", "pub-enc.key", "--new", "new.key", "--skill", "stockade.hello", "--out", "rotation.sig"}, code: outOK},
		{name: "rotate-same-key", args: []string{"trust", "rotate", "--old", "pub.key", "--new", "pub-enc.key", "--out", "rotation.sig"}, env: pass, code: outUsage},
		{name: "rotate-bad-skill-id", args: []string{"trust", "rotate", "--old", "pub.key", "--new", "new.key", "--skill", "Not.An.ID", "--out", "rotation.sig"}, code: outUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorkspace(t)
			if tc.setup != nil {
				tc.setup(w)
			}
			r := w.run(tc.env, tc.args...)
			if outcome(r.code) != tc.code {
				t.Errorf("exit %d (%s); want %d (%s)\nstdout:\n%s\nstderr:\n%s", r.code, outcome(r.code), tc.code, tc.code, r.stdout, r.stderr)
			}
			w.check("offline-"+tc.name, r, tc.args, tc.masks...)
		})
	}
}

// helloAbs is the hello source as an absolute path (commands run in the
// workspace); the golden files show it as $HELLO.
func helloAbs() string {
	p, err := filepath.Abs(helloSrc)
	if err != nil {
		panic(err)
	}
	return p
}

// TestBuildDeterministic: the same sources and key give byte-identical
// archives and signatures, from two runs of the binary (one with the key
// encrypted) and from the library.
func TestBuildDeterministic(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t)
	pass := []string{passphraseEnv + "=" + testPassword}
	for _, run := range []struct {
		out, key string
	}{{"a", "pub.key"}, {"b", "pub.key"}, {"c", "pub-enc.key"}} {
		if r := w.run(pass, "package", "build", helloAbs(), "--key", run.key, "--out", run.out); r.code != 0 {
			t.Fatalf("build: exit %d: %s", r.code, r.stderr)
		}
	}
	const name = "stockade.hello-1.0.0.skill"
	for _, f := range []string{name, name + ".sig"} {
		a := w.read(filepath.Join("a", f))
		for _, other := range []string{"b", "c"} {
			if !bytes.Equal(a, w.read(filepath.Join(other, f))) {
				t.Errorf("%s differs between builds a and %s", f, other)
			}
		}
	}
	if !bytes.Equal(w.read(filepath.Join("a", name)), w.read("hello.skill")) ||
		!bytes.Equal(w.read(filepath.Join("a", name+".sig")), w.read("hello.skill.sig")) {
		t.Error("the binary's build differs from skill.Build's")
	}
	fi, err := os.Stat(w.path(filepath.Join("a", name)))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("archive mode %04o; want 0644", fi.Mode().Perm())
	}
}
