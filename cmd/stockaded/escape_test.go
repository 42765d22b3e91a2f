//go:build linux

package main

// The escape suite: tests that attack the sandbox from inside a call and
// assert that the attack failed, in every isolation mode (isolationModes), each
// next to a plain "works" counterpart in the same mode so that the suite
// cannot pass by refusing everything.
//
// Most attacks are made by one C program, escHelperSource, compiled on the
// host with the system's C compiler and run as the target of process.run. It
// takes its operations as arguments of the form name=op:hex:hex (the
// parameters hex-encoded, so that the broker's early refusal of path-like
// arguments does not hide the kernel's answer) and prints one line for each:
// "name: ok DETAIL" or "name: errno N (TEXT)". Some of them are also run on
// the host, outside any sandbox, as a control: there the kernel lets them
// through, so the sandbox is what stopped them.
//
// Tier C is asserted to stop everything below. Tier B is asserted only on
// what the design gives it (rlimits, no_new_privs, the executor seccomp
// profile with egress "none", a cleared environment, the broker's refusal of
// processes of a call, lifetime): the threat model says it does not stop file
// reads, signals or /proc access under the same uid, and those are not run
// there.
//
// An attack that succeeds where the design says it must fail is a hole. The
// ones known today are listed in escHoles: when such an attack succeeds, the
// subtest is skipped with "HOLE: ..." so that the suite stays usable, unless
// STOCKADE_ESCAPE_STRICT=1, which turns every hole into a failure:
//
//	STOCKADE_ESCAPE_STRICT=1 go test -count=1 -run Escape ./cmd/stockaded
//
// An attack that succeeds and is not a known hole always fails.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/broker"
	"github.com/stockade-dev/stockade/ipc"
)

// escSecretVar is put in stockaded's environment: no target may see it.
const escSecretVar = "STOCKADE_TEST_SECRET"

// escEnv is one isolation mode's running system and its fixtures.
type escEnv struct {
	mode    string // an isolationModes name
	s       *system
	helper  string // the compiled attack program ("" without a C compiler)
	goHello string // a Go program
	secret  string // the value of escSecretVar in stockaded's environment
	ws      string // the workspace of the attack calls
	outside string // a directory outside every workspace
	pids    struct{ broker, verifier, supervisor int }
	cgroup  bool // calls get a cgroup here (pids and memory limits)
	tcp     escCounter
	udp     escCounter
	abs     escCounter // the abstract socket served outside
	named   escCounter // the pathname socket served outside
	absName string
	tcpAddr *net.TCPAddr
	udpAddr *net.UDPAddr
}

func (e *escEnv) tierC() bool { return e.mode != "tier B" }
func (e *escEnv) bwrap() bool { return e.mode == "tier C bwrap" }

// landlockOnly is Tier C without namespaces.
func (e *escEnv) landlockOnly() bool { return e.mode == "tier C landlock" }

// mqName is the POSIX message queue the host makes for the mode.
func (e *escEnv) mqName() string {
	return fmt.Sprintf("/stockade-escape-%d-%d", os.Getpid(), e.pids.broker)
}

type escCounter struct{ n atomic.Int64 }

// escResult is one line of the helper's output.
type escResult struct {
	ok    bool
	errno syscall.Errno
	text  string
}

func (r escResult) String() string { return r.text }

// parseEscResults reads the helper's lines into a map by name.
func parseEscResults(out []byte) map[string]escResult {
	res := map[string]escResult{}
	for _, line := range strings.Split(string(out), "\n") {
		name, rest, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		r := escResult{text: line}
		switch {
		case strings.HasPrefix(rest, "ok"):
			r.ok = true
		case strings.HasPrefix(rest, "errno "):
			f := strings.Fields(rest)
			if n, err := strconv.Atoi(f[1]); err == nil {
				r.errno = syscall.Errno(n)
			}
		}
		res[name] = r
	}
	return res
}

// escExpect is what a probe must do in a mode.
type escExpect int

const (
	escWorks   escExpect = iota // succeeds in every mode it runs in
	escBlocked                  // fails in every mode it runs in
	escEPERM                    // fails with EPERM (the seccomp filter) in every mode
	escENOSYS                   // fails with ENOSYS (the filter's answer to clone3)
	escRefused                  // fails, or connects and is refused by Stockade before the handshake
)

// escProbe is one operation of the helper.
type escProbe struct {
	name   string
	op     string
	args   []string
	expect escExpect
	// tierC: run only in Tier C (Tier B does not claim to stop it, and some
	// of these would do harm there).
	tierC bool
	// control: also run outside the sandbox, where the kernel must not
	// refuse it with EPERM or EACCES (checked as root).
	control bool
	// check, when set, runs after the call: host-side effects.
	check func(t *testing.T, e *escEnv, r escResult)
}

func (p escProbe) arg() string {
	var b strings.Builder
	b.WriteString(p.name + "=" + p.op)
	for _, a := range p.args {
		b.WriteString(":" + hex.EncodeToString([]byte(a)))
	}
	return b.String()
}

// escHoles are the attacks known to succeed today, by probe name: the
// function returns the explanation when the hole applies to e's mode.
var escHoles = map[string]func(e *escEnv) string{
	"connect-named-socket-outside": func(e *escEnv) string {
		if e.landlockOnly() {
			return "Landlock (ABI <= 7) does not restrict connect(2) to pathname Unix sockets: without a mount namespace every socket the uid can reach (ssh-agent, D-Bus, docker.sock, systemd) is reachable"
		}
		return ""
	},
	"sysv-shm-outside": func(e *escEnv) string {
		if e.landlockOnly() {
			return "without an IPC namespace the target attaches SysV shared memory of the host (Landlock does not cover SysV IPC)"
		}
		return ""
	},
	"mknod-kmsg":     rootCapsHole("the target keeps CAP_MKNOD: it makes a device node in the writable workspace and opens it (here /dev/kmsg's 1:11, reading the kernel log that syslog(2) and /dev are denied; a disk's node would give the raw disk)"),
	"broker-environ": rootCapsHole("with CAP_SYS_PTRACE Landlock lets PTRACE_MODE_READ through: /proc/<pid>/environ of the broker (and of any process on the host) is readable"),
	"broker-maps":    rootCapsHole("with CAP_SYS_PTRACE Landlock lets PTRACE_MODE_READ through: /proc/<pid>/maps of the broker is readable"),
	"supervisor-environ": rootCapsHole(
		"with CAP_SYS_PTRACE Landlock lets PTRACE_MODE_READ through: stockaded's environment, and the secret in it, is readable from /proc/<pid>/environ"),
	"sibling-environ": rootCapsHole("with CAP_SYS_PTRACE Landlock lets PTRACE_MODE_READ through: another call's /proc/<pid>/environ is readable"),
	"read-proc-kcore": rootCapsHole("the target keeps CAP_SYS_RAWIO and /proc is readable: /proc/kcore, the kernel's memory, is readable"),
	"capabilities":    rootCapsHole("the target keeps every capability of root: Landlock-only Tier C drops none"),
	"fanotify":        rootCapsHole("with CAP_SYS_ADMIN the target watches every open(2) on the host filesystem with fanotify (and could take permission events, denying the host's opens)"),
	"fork-bomb-kills-executor": func(e *escEnv) string {
		return "the executor joins the call's pids cgroup: a fork bomb that fills pids.max leaves it unable to make a thread, the Go runtime aborts (fatal error: newosproc), the call fails with internal, and without bwrap's --die-with-parent the bomb outlives the call and stockaded (intermittent)"
	},
	"raise-rlimit": func(e *escEnv) string {
		if !e.bwrap() && os.Geteuid() == 0 {
			return "as root the target keeps CAP_SYS_RESOURCE and raises its hard rlimits [tier B and landlock-only Tier C as root]"
		}
		return ""
	},
}

// rootCapsHole is a hole of Landlock-only Tier C when stockaded runs as
// root: the target keeps root's capabilities.
func rootCapsHole(why string) func(e *escEnv) string {
	return func(e *escEnv) string {
		if e.landlockOnly() && os.Geteuid() == 0 {
			return why + " [landlock-only Tier C as root]"
		}
		return ""
	}
}

// escStrict turns known holes into failures.
func escStrict() bool { return os.Getenv("STOCKADE_ESCAPE_STRICT") == "1" }

// attackSucceeded reports an attack that worked: a known hole is skipped
// (unless STOCKADE_ESCAPE_STRICT is set), anything else fails.
func attackSucceeded(t *testing.T, e *escEnv, name, what string) {
	t.Helper()
	if h := escHoles[name]; h != nil {
		if why := h(e); why != "" && !escStrict() {
			t.Skipf("HOLE (%s): %s; observed: %s", e.mode, why, what)
		}
	}
	t.Errorf("%s: attack %s succeeded: %s", e.mode, name, what)
}

// TestEscape runs the escape suite in each isolation mode.
func TestEscape(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the escape suite attacks the Linux sandbox")
	}
	bins := t.TempDir()
	// Both programs are run by absolute path: the sandbox adds the program
	// itself to what the target may read.
	if err := os.Chmod(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	helper := buildEscHelper(t, bins)
	goHello := buildGoHello(t, bins)

	secret := fmt.Sprintf("s3cr3t-%d", time.Now().UnixNano())
	// stockaded inherits this process's environment; the supervisor must
	// clear it for every role, and no target may read it.
	old, had := os.LookupEnv(escSecretVar)
	os.Setenv(escSecretVar, secret)
	t.Cleanup(func() {
		if had {
			os.Setenv(escSecretVar, old)
		} else {
			os.Unsetenv(escSecretVar)
		}
	})

	for _, m := range isolationModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			e := startEscEnv(t, m.name, m.config, helper, goHello, secret)
			runEscapeMode(t, e)
		})
	}
}

// escModeConfig is the mode's configuration with the limits and tools the
// suite needs, every tool in the mode's isolation.
func escModeConfig(mode, base string) string {
	iso := `tier = "B"` + "\n"
	switch mode {
	case "tier C landlock":
		iso = "tier = \"C\"\nbwrap = \"off\"\n"
	case "tier C bwrap":
		iso = "tier = \"C\"\nbwrap = \"required\"\n"
	}
	return "max_conns_per_uid = 64\n" + base +
		// 1 MiB files, 512 MiB of memory in the call's cgroup.
		"[run.limits]\nfile_size = 1048576\nmemory = 536870912\n" +
		`
[[tool]]
name = "sh-cpu1"
kind = "process"
command = "/bin/sh"
allow_args = true
allow_interpreters = true
` + iso + `
[tool.limits]
cpu_seconds = 1
timeout = "15s"

[[tool]]
name = "printenv"
kind = "process"
command = "/usr/bin/printenv"
env = { GREETING = "hello-from-config" }
` + iso
}

func startEscEnv(t *testing.T, mode, config, helper, goHello, secret string) *escEnv {
	e := &escEnv{mode: mode, helper: helper, goHello: goHello, secret: secret}
	e.s = startSystem(t, escModeConfig(mode, config))
	st := e.s.status()
	e.pids.broker, e.pids.verifier, e.pids.supervisor = st.Broker.PID, st.Verifier.PID, e.s.cmd.Process.Pid
	e.ws, e.outside = t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(e.ws, "in.txt"), "inside\n")
	write(filepath.Join(e.outside, "secret.txt"), "SENTINEL-"+secret+"\n")
	write(filepath.Join(e.outside, "sym-target.txt"), "orig\n")
	write(filepath.Join(e.outside, "steal.txt"), "orig\n")
	if err := os.Symlink(filepath.Join(e.outside, "sym-target.txt"), filepath.Join(e.ws, "sym")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.ws, "mnt"), 0o755); err != nil {
		t.Fatal(err)
	}

	// Listeners outside: TCP and UDP on loopback, an abstract Unix socket and
	// a pathname one in the outside directory.
	serve := func(ln net.Listener, c *escCounter) {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				c.n.Add(1)
				_, _ = conn.Write([]byte("HELLO-FROM-OUTSIDE\n"))
				conn.Close()
			}
		}()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.tcpAddr = ln.Addr().(*net.TCPAddr)
	serve(ln, &e.tcp)
	e.absName = fmt.Sprintf("@stockade-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
	if ln, err = net.Listen("unix", e.absName); err != nil {
		t.Fatal(err)
	}
	serve(ln, &e.abs)
	if ln, err = net.Listen("unix", filepath.Join(e.outside, "s.sock")); err != nil {
		t.Fatal(err)
	}
	serve(ln, &e.named)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	e.udpAddr = pc.LocalAddr().(*net.UDPAddr)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			e.udp.n.Add(1)
		}
	}()
	return e
}

// call runs a request and fails the test on a transport or typed error.
func (e *escEnv) call(t *testing.T, req *ipc.CallRequest) *ipc.Outcome {
	t.Helper()
	out, err := e.s.call(req)
	if err != nil {
		t.Fatalf("%s: call %v: %v", e.mode, req.Args, err)
	}
	return out
}

// sh runs a shell script in the workspace.
func (e *escEnv) sh(t *testing.T, script string) *ipc.Outcome {
	t.Helper()
	return e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: []string{"/bin/sh", "-c", script}})
}

// runHelper runs the helper with the probes in the sandbox.
func (e *escEnv) runHelper(t *testing.T, ws string, probes []escProbe) (*ipc.Outcome, map[string]escResult) {
	t.Helper()
	args := []string{e.helper}
	for _, p := range probes {
		args = append(args, p.arg())
	}
	out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: ws, TimeoutMS: 20000, Args: args})
	if out.Status != ipc.StatusOK {
		t.Fatalf("%s: helper: %s %s exit %d\nstdout:\n%s\nstderr:\n%s", e.mode, out.Status, out.Signal, out.ExitCode, out.Stdout, out.Stderr)
	}
	return out, parseEscResults(out.Stdout)
}

// runHelperOnHost runs the probes outside any sandbox.
func (e *escEnv) runHelperOnHost(t *testing.T, probes []escProbe) map[string]escResult {
	t.Helper()
	args := []string{}
	for _, p := range probes {
		args = append(args, p.arg())
	}
	cmd := exec.Command(e.helper, args...)
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper on the host: %v", err)
	}
	return parseEscResults(out)
}

func runEscapeMode(t *testing.T, e *escEnv) {
	// A first call: the plain case, and whether calls get a cgroup here.
	out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: []string{"/bin/cat", "in.txt"}})
	if out.Status != ipc.StatusOK || string(out.Stdout) != "inside\n" {
		t.Fatalf("%s: cat in the workspace: %+v", e.mode, out)
	}
	e.cgroup = out.Sandbox.Cgroup != ""
	wantTier := "B"
	if e.tierC() {
		wantTier = "C"
	}
	if out.Tier != wantTier || (e.bwrap() != (out.Sandbox.Backend == "bwrap")) {
		t.Fatalf("%s: the call ran in tier %s backend %s", e.mode, out.Tier, out.Sandbox.Backend)
	}

	// The calls bound by time run meanwhile.
	lifetime := startEscLifetime(t, e)

	t.Run("arguments", func(t *testing.T) { escArguments(t, e) })
	t.Run("works", func(t *testing.T) { escWorksCases(t, e) })
	t.Run("environment", func(t *testing.T) { escEnvironment(t, e) })
	t.Run("shell", func(t *testing.T) { escShell(t, e) })
	t.Run("helper", func(t *testing.T) { escHelperProbes(t, e) })
	t.Run("x32", func(t *testing.T) { escX32(t, e) })
	t.Run("setuid", func(t *testing.T) { escSetuid(t, e) })
	if e.tierC() {
		t.Run("planted hardlink", func(t *testing.T) { escPlantedHardlink(t, e) })
		t.Run("sibling", func(t *testing.T) { escSibling(t, e) })
	}
	t.Run("resources", func(t *testing.T) { escResources(t, e) })
	t.Run("lifetime", func(t *testing.T) { lifetime(t) })

	// After all that, the system still serves a call.
	out = e.call(t, &ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "still", "here"}})
	if out.Status != ipc.StatusOK || string(out.Stdout) != "still here\n" {
		t.Fatalf("%s: the system does not serve calls after the attacks: %+v", e.mode, out)
	}
	if st := e.s.status(); st.Broker.PID != e.pids.broker {
		t.Errorf("%s: the broker was restarted during the attacks", e.mode)
	}
}

// escArguments: the broker refuses arguments that name paths outside the
// workspace before anything runs, in every tier; inside ones work.
func escArguments(t *testing.T, e *escEnv) {
	ok := [][]string{
		{"/bin/cat", "in.txt"},
		{"/bin/cat", "./in.txt"},
		{"/bin/cat", filepath.Join(e.ws, "in.txt")},
	}
	for _, args := range ok {
		out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: args})
		if out.Status != ipc.StatusOK || string(out.Stdout) != "inside\n" {
			t.Errorf("%s: %v: %s %q", e.mode, args, out.Status, out.Stdout)
		}
	}
	refused := [][]string{
		{"/bin/cat", "../in.txt"},
		{"/bin/cat", "x/../../etc/passwd"},
		{"/bin/cat", "/etc/shadow"},
		{"/bin/cat", filepath.Join(e.outside, "secret.txt")},
		{"/bin/cat", "sym"}, // planted symlink to outside
		{"/bin/cat", "--file=/etc/shadow"},
		{"/bin/cat", "-o/etc/shadow"},
		{"/bin/cat", "file:///etc/shadow"},
		{"/bin/cat", "~/secret"},
		{"/bin/cat", e.ws + "/../" + filepath.Base(e.outside) + "/secret.txt"},
	}
	for _, args := range refused {
		out, err := e.s.call(&ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: args})
		var ie *ipc.Error
		if !errors.As(err, &ie) || ie.Class != ipc.ClassInvalidInput {
			t.Errorf("%s: %v: want invalid_input, got %v (outcome %+v)", e.mode, args, err, out)
		}
	}
}

// escPlantedHardlink: a hardlink to an outside file, planted in a writable
// workspace by the host, would let the target write that file (Landlock and
// bind mounts confine paths, not inodes). Tier C refuses such a workspace; the
// same workspace without the link works.
func escPlantedHardlink(t *testing.T, e *escEnv) {
	ws, outside := t.TempDir(), filepath.Join(t.TempDir(), "hl-target.txt")
	if err := os.WriteFile(outside, []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(ws, "hl")); err != nil {
		t.Fatal(err)
	}
	attacks := map[string][]string{
		"write": {"/bin/sh", "-c", "echo PWNED >> hl"},
		"read":  {"/bin/cat", "hl"},
	}
	for name, args := range attacks {
		out, err := e.s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: args})
		var ie *ipc.Error
		switch {
		case errors.As(err, &ie) && ie.Class == ipc.ClassInvalidInput:
		case err != nil:
			t.Errorf("%s: %s through a planted hardlink: %v, want invalid_input", e.mode, name, err)
		case out.Status == ipc.StatusOK:
			t.Run(name, func(t *testing.T) {
				attackSucceeded(t, e, name+"-planted-hardlink", fmt.Sprintf("%v ran: %s %q", args, out.Status, out.Stdout))
			})
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "orig\n" {
		t.Errorf("%s: the outside file now holds %q (%v)", e.mode, b, err)
	}
	if err := os.Remove(filepath.Join(ws, "hl")); err != nil {
		t.Fatal(err)
	}
	out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c", "echo mine > mine.txt && cat mine.txt"}})
	if out.Status != ipc.StatusOK || string(out.Stdout) != "mine\n" {
		t.Fatalf("%s: the workspace without the link: %+v", e.mode, out)
	}
}

// escWorksCases: the plain things a tool does work in every mode.
func escWorksCases(t *testing.T, e *escEnv) {
	t.Run("ls", func(t *testing.T) {
		out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: []string{"ls", "-a"}})
		if out.Status != ipc.StatusOK || !strings.Contains(string(out.Stdout), "in.txt") {
			t.Fatalf("%s: ls: %+v", e.mode, out)
		}
	})
	t.Run("go binary", func(t *testing.T) {
		out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: []string{e.goHello, "in.txt"}})
		if out.Status != ipc.StatusOK || string(out.Stdout) != "hello from Go: inside\n" {
			t.Fatalf("%s: Go program: %s exit %d %q %q", e.mode, out.Status, out.ExitCode, out.Stdout, out.Stderr)
		}
	})
	t.Run("c compiler", func(t *testing.T) {
		cc, err := exec.LookPath("cc")
		if err != nil {
			t.Skip("no C compiler on this host")
		}
		ws := t.TempDir()
		src := "#include <stdio.h>\nint main(void) { puts(\"hello from C\"); return 0; }\n"
		if err := os.WriteFile(filepath.Join(ws, "hello.c"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{cc, "-o", "hello", "hello.c"}})
		if out.Status != ipc.StatusOK {
			t.Fatalf("%s: cc in the sandbox: %s exit %d\n%s", e.mode, out.Status, out.ExitCode, out.Stderr)
		}
		out = e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{filepath.Join(ws, "hello")}})
		if out.Status != ipc.StatusOK || string(out.Stdout) != "hello from C\n" {
			t.Fatalf("%s: the compiled program: %+v", e.mode, out)
		}
	})
	t.Run("write in workspace and tmp", func(t *testing.T) {
		out := e.sh(t, `echo made > made.txt && echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t" && cat made.txt`)
		if out.Status != ipc.StatusOK || string(out.Stdout) != "tmp\nmade\n" {
			t.Fatalf("%s: %+v", e.mode, out)
		}
		if b, err := os.ReadFile(filepath.Join(e.ws, "made.txt")); err != nil || string(b) != "made\n" {
			t.Fatalf("%s: the host does not see the file: %q %v", e.mode, b, err)
		}
	})
	t.Run("configured env", func(t *testing.T) {
		out := e.call(t, &ipc.CallRequest{Tool: "printenv"})
		if out.Status != ipc.StatusOK || !strings.Contains(string(out.Stdout), "GREETING=hello-from-config\n") {
			t.Fatalf("%s: a tool's configured variable: %+v", e.mode, out)
		}
	})
}

// escEnvironment: the secret in stockaded's environment reaches no target.
func escEnvironment(t *testing.T, e *escEnv) {
	// Control: the secret is there to be stolen.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", e.pids.supervisor))
	if err != nil || !bytes.Contains(b, []byte(e.secret)) {
		t.Fatalf("stockaded's environment lacks the secret: the test proves nothing (%v)", err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", e.pids.broker)); err == nil && bytes.Contains(b, []byte(e.secret)) {
		t.Errorf("%s: the broker's environment holds stockaded's secret: roles must get an empty environment", e.mode)
	}
	out := e.sh(t, `env; echo ---; tr '\0' '\n' < /proc/self/environ; echo ---; tr '\0' '\n' < "/proc/$PPID/environ"; echo ---; tr '\0' '\n' < /proc/1/environ; true`)
	if out.Status != ipc.StatusOK {
		t.Fatalf("%s: %+v", e.mode, out)
	}
	all := string(out.Stdout) + string(out.Stderr)
	if strings.Contains(all, e.secret) || strings.Contains(all, escSecretVar) {
		t.Fatalf("%s: the secret reached the target:\n%s", e.mode, all)
	}
	if !strings.Contains(string(out.Stdout), "PATH=") {
		t.Fatalf("%s: env printed nothing: the test proves nothing:\n%s", e.mode, all)
	}
}

// escShell: attacks made with the host's own tools.
func escShell(t *testing.T, e *escEnv) {
	script := fmt.Sprintf(`r() { n=$1; shift; if "$@" >/dev/null 2>&1; then echo "$n: ok"; else echo "$n: errno 0 (exit $?)"; fi; }
r unshare-user unshare -U true
r unshare-map-root unshare -r -m true
r nested-bwrap bwrap --ro-bind / / true
r nested-bwrap-dev bwrap --dev-bind / / --unshare-pid true
r mount-tmpfs mount -t tmpfs none mnt
r dev-tcp bash -c 'echo x > /dev/tcp/127.0.0.1/%d'
r ls ls
r cat cat in.txt
`, e.tcpAddr.Port)
	before := e.tcp.n.Load()
	out := e.sh(t, script)
	res := parseEscResults(out.Stdout)
	for _, name := range []string{"ls", "cat"} {
		if !res[name].ok {
			t.Errorf("%s: %s does not work: %s", e.mode, name, res[name])
		}
	}
	for _, name := range []string{"unshare-user", "unshare-map-root", "nested-bwrap", "nested-bwrap-dev", "mount-tmpfs", "dev-tcp"} {
		r, ok := res[name]
		if !ok {
			t.Errorf("%s: %s: no result:\n%s\n%s", e.mode, name, out.Stdout, out.Stderr)
			continue
		}
		if r.ok {
			t.Run(name, func(t *testing.T) { attackSucceeded(t, e, name, r.text) })
		}
	}
	if fi, err := os.ReadDir(filepath.Join(e.ws, "mnt")); err != nil || len(fi) != 0 {
		t.Errorf("%s: mnt changed: %v %v", e.mode, fi, err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := e.tcp.n.Load() - before; n != 0 {
		t.Errorf("%s: the loopback listener saw %d connections from the call", e.mode, n)
	}
}

// escProbes is the helper's table for e's mode.
func escProbes(e *escEnv) []escProbe {
	hello := func(ch ipc.Channel) string {
		h, _ := ipc.EncodeEnvelope(0, ipc.KindHello, ipc.Hello{Proto: ipc.ProtocolName, Version: ipc.ProtocolVersion, Channel: ch})
		st, _ := ipc.EncodeEnvelope(1, ipc.KindStatus, ipc.Empty{})
		return string(ipc.AppendFrame(ipc.AppendFrame(nil, h), st))
	}
	itoa := strconv.Itoa
	sys := func(name string, nr uintptr, expect escExpect, args ...int) escProbe {
		a := []string{strconv.FormatUint(uint64(nr), 10)}
		for _, x := range args {
			a = append(a, strconv.Itoa(x))
		}
		return escProbe{name: name, op: "syscall", args: a, expect: expect, control: true}
	}
	unchanged := func(path, want string) func(t *testing.T, e *escEnv, r escResult) {
		return func(t *testing.T, e *escEnv, r escResult) {
			if b, err := os.ReadFile(path); err != nil || string(b) != want {
				t.Errorf("%s: %s now holds %q (%v), want %q", e.mode, path, b, err, want)
			}
		}
	}
	absent := func(path string) func(t *testing.T, e *escEnv, r escResult) {
		return func(t *testing.T, e *escEnv, r escResult) {
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				os.Remove(path)
				t.Errorf("%s: %s was made from inside the sandbox (%v)", e.mode, path, err)
			}
		}
	}
	noSecret := func(t *testing.T, e *escEnv, r escResult) {
		if strings.Contains(r.text, e.secret) || strings.Contains(r.text, "SENTINEL") {
			t.Errorf("%s: the sentinel's secret reached the target: %s", e.mode, r.text)
		}
	}
	etcFile := fmt.Sprintf("/etc/stockade-escape-%d", time.Now().UnixNano())
	escapeFile := filepath.Join(e.ws, "..", fmt.Sprintf("escaped-%d", time.Now().UnixNano()))
	// Without namespaces (Landlock-only Tier C) the sealed seccomp profile
	// refuses socket(AF_UNIX): the host's named sockets would be reachable.
	unixSocket := escWorks
	if e.landlockOnly() {
		unixSocket = escEPERM
	}
	probes := []escProbe{
		// Works: the workspace, the system's read-only files, Unix sockets,
		// ioctl in general.
		{name: "hello", op: "hello", expect: escWorks},
		{name: "read-workspace", op: "read", args: []string{"in.txt"}, expect: escWorks},
		{name: "read-workspace-abs", op: "read", args: []string{filepath.Join(e.ws, "in.txt")}, expect: escWorks},
		{name: "read-etc-passwd", op: "read", args: []string{"/etc/passwd"}, expect: escWorks},
		{name: "ls-workspace", op: "ls", args: []string{"."}, expect: escWorks},
		{name: "write-workspace", op: "write", args: []string{"written.txt"}, expect: escWorks},
		{name: "socket-unix", op: "socket", args: []string{"1", "1"}, expect: unixSocket},
		{name: "ioctl-tcgets", op: "tcgets", expect: escBlocked}, // ENOTTY: ioctl runs, /dev/null is no tty

		// Files outside the workspace.
		{name: "read-etc-shadow", op: "read", args: []string{"/etc/shadow"}, expect: escBlocked, tierC: true, control: true},
		{name: "read-sentinel-outside", op: "read", args: []string{filepath.Join(e.outside, "secret.txt")}, expect: escBlocked, tierC: true, control: true, check: noSecret},
		{name: "ls-outside", op: "ls", args: []string{e.outside}, expect: escBlocked, tierC: true},
		{name: "ls-root-home", op: "ls", args: []string{"/root"}, expect: escBlocked, tierC: true},
		{name: "read-proc-self-root", op: "read", args: []string{"/proc/self/root/etc/shadow"}, expect: escBlocked, tierC: true},
		{name: "write-outside", op: "write", args: []string{filepath.Join(e.outside, "direct.txt")}, expect: escBlocked, tierC: true, check: absent(filepath.Join(e.outside, "direct.txt"))},
		{name: "write-etc", op: "write", args: []string{etcFile}, expect: escBlocked, tierC: true, check: absent(etcFile)},
		{name: "write-dotdot", op: "write", args: []string{escapeFile}, expect: escBlocked, tierC: true, check: absent(filepath.Clean(escapeFile))},
		{name: "write-planted-symlink", op: "write", args: []string{"sym"}, expect: escBlocked, tierC: true, check: unchanged(filepath.Join(e.outside, "sym-target.txt"), "orig\n")},
		{name: "hardlink-outside-in", op: "link", args: []string{filepath.Join(e.outside, "secret.txt"), "hl2"}, expect: escBlocked, tierC: true},
		{name: "symlink-make", op: "symlink", args: []string{filepath.Join(e.outside, "via-symlink.txt"), "sl2"}, expect: escWorks, tierC: true},
		{name: "write-own-symlink", op: "write", args: []string{"sl2"}, expect: escBlocked, tierC: true, check: absent(filepath.Join(e.outside, "via-symlink.txt"))},
		{name: "rename-outside-in", op: "rename", args: []string{filepath.Join(e.outside, "steal.txt"), "stolen.txt"}, expect: escBlocked, tierC: true, check: unchanged(filepath.Join(e.outside, "steal.txt"), "orig\n")},
		{name: "write-config", op: "openw", args: []string{filepath.Join(e.s.state, "stockade.toml")}, expect: escBlocked, tierC: true},
		// Stockade's own binaries (the CLI: the running ones answer ETXTBSY
		// before any sandbox is asked).
		{name: "write-stockade-binary", op: "openw", args: []string{filepath.Join(binDir, "stockade")}, expect: escBlocked, tierC: true},
		{name: "write-proc-sys", op: "openw", args: []string{"/proc/sys/kernel/hostname"}, expect: escBlocked, tierC: true, control: true},
		{name: "write-sysrq", op: "openw", args: []string{"/proc/sysrq-trigger"}, expect: escBlocked, tierC: true},
		{name: "cgroup-escape", op: "openw", args: []string{"/sys/fs/cgroup/pids/cgroup.procs"}, expect: escBlocked, tierC: true},
		{name: "ls-sys", op: "ls", args: []string{"/sys"}, expect: escBlocked, tierC: true},
		{name: "read-dev-kmsg", op: "read", args: []string{"/dev/kmsg"}, expect: escBlocked, tierC: true},
		{name: "read-proc-kcore", op: "read", args: []string{"/proc/kcore"}, expect: escBlocked, tierC: true},
		{name: "mknod-kmsg", op: "mknod", args: []string{"kmsg", "1", "11"}, expect: escBlocked, tierC: true},
		{name: "fanotify", op: "fanotify", expect: escBlocked, tierC: true},

		// Other processes: the broker, the supervisor, the verifier, the
		// executor.
		{name: "ptrace-broker", op: "ptrace", args: []string{itoa(e.pids.broker)}, expect: escEPERM},
		{name: "vmread-broker", op: "vmread", args: []string{itoa(e.pids.broker)}, expect: escEPERM},
		{name: "broker-environ", op: "find", args: []string{fmt.Sprintf("/proc/%d/environ", e.pids.broker), escSecretVar}, expect: escBlocked, tierC: true, check: noSecret},
		{name: "broker-maps", op: "read", args: []string{fmt.Sprintf("/proc/%d/maps", e.pids.broker)}, expect: escBlocked, tierC: true},
		{name: "broker-mem", op: "read", args: []string{fmt.Sprintf("/proc/%d/mem", e.pids.broker)}, expect: escBlocked, tierC: true},
		{name: "supervisor-environ", op: "find", args: []string{fmt.Sprintf("/proc/%d/environ", e.pids.supervisor), escSecretVar}, expect: escBlocked, tierC: true, check: noSecret},
		{name: "broker-root", op: "ls", args: []string{fmt.Sprintf("/proc/%d/root/", e.pids.broker)}, expect: escBlocked, tierC: true},
		{name: "kill-broker", op: "kill", args: []string{itoa(e.pids.broker), "0"}, expect: escBlocked, tierC: true},
		{name: "kill-supervisor", op: "kill", args: []string{itoa(e.pids.supervisor), "0"}, expect: escBlocked, tierC: true},
		{name: "kill-verifier", op: "kill", args: []string{itoa(e.pids.verifier), "0"}, expect: escBlocked, tierC: true},
		{name: "kill-parent", op: "kill", args: []string{"ppid", "0"}, expect: escBlocked, tierC: true},

		// Sockets.
		{name: "connect-agent-sock", op: "unix", args: []string{e.s.socket, hello(ipc.ChannelAgent)}, expect: escRefused},
		{name: "connect-admin-sock", op: "unix", args: []string{filepath.Join(e.s.runtime, ipc.AdminSocketName), hello(ipc.ChannelAdmin)}, expect: escRefused},
		{name: "connect-abstract-outside", op: "unix", args: []string{e.absName}, expect: escBlocked, tierC: true, control: true},
		{name: "connect-named-socket-outside", op: "unix", args: []string{filepath.Join(e.outside, "s.sock")}, expect: escBlocked, tierC: true, control: true},
		{name: "tcp-loopback", op: "tcp", args: []string{"127.0.0.1", itoa(e.tcpAddr.Port)}, expect: escEPERM, control: true},
		{name: "udp-loopback", op: "udp", args: []string{"127.0.0.1", itoa(e.udpAddr.Port)}, expect: escEPERM, control: true},
		{name: "socket-inet6", op: "socket", args: []string{"10", "2"}, expect: escEPERM, control: true},
		{name: "socket-netlink", op: "socket", args: []string{"16", "3"}, expect: escEPERM, control: true},
		{name: "socket-packet", op: "socket", args: []string{"17", "3"}, expect: escEPERM},
		{name: "socket-vsock", op: "socket", args: []string{"40", "1"}, expect: escEPERM},

		// Terminals: stdin is /dev/null, there is no controlling terminal,
		// and TIOCSTI is filtered whatever the descriptor.
		{name: "tiocsti-stdin", op: "tiocsti", args: []string{"fd0"}, expect: escEPERM},
		{name: "tiocsti-stdin-64bit", op: "tiocsti", args: []string{"fd0wide"}, expect: escEPERM},
		{name: "tiocsti-dev-tty", op: "tiocsti", args: []string{"tty"}, expect: escBlocked},
		{name: "tiocsti-new-pty", op: "tiocsti", args: []string{"pty"}, expect: escBlocked, control: true},

		// Namespaces, mounts, the kernel.
		{name: "sysv-shm-outside", op: "shm", expect: escBlocked, tierC: true}, // id filled in below
		{name: "mqueue-outside", op: "mq", args: []string{e.mqName(), "open"}, expect: escBlocked, tierC: true},
		{name: "raise-rlimit", op: "rlimit", expect: escBlocked},
		sys("io_uring_setup", unix.SYS_IO_URING_SETUP, escEPERM, 1, 0),
		sys("bpf", unix.SYS_BPF, escEPERM, 0, 0, 0),
		sys("perf_event_open", unix.SYS_PERF_EVENT_OPEN, escEPERM, 0, 0, -1, -1, 0),
		sys("userfaultfd", unix.SYS_USERFAULTFD, escEPERM, 0),
		sys("keyctl", unix.SYS_KEYCTL, escEPERM, -1, 0),
		sys("add_key", unix.SYS_ADD_KEY, escEPERM, 0, 0, 0, 0, 0),
		sys("open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, escEPERM, -1, 0, 0),
		sys("name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, escEPERM, -1, 0, 0, 0, 0),
		sys("setns", unix.SYS_SETNS, escEPERM, -1, 0),
		sys("fsopen", unix.SYS_FSOPEN, escEPERM, 0, 0),
		sys("chroot", unix.SYS_CHROOT, escEPERM, 0),
		sys("pivot_root", unix.SYS_PIVOT_ROOT, escEPERM, 0, 0),
		sys("umount2", unix.SYS_UMOUNT2, escEPERM, 0, 0),
		sys("swapon", unix.SYS_SWAPON, escEPERM, 0, 0),
		sys("syslog", unix.SYS_SYSLOG, escEPERM, 10, 0, 0),
		sys("personality-no-aslr", unix.SYS_PERSONALITY, escEPERM, 0x0040000), // ADDR_NO_RANDOMIZE
		sys("kcmp", unix.SYS_KCMP, escEPERM, 0, 0, 0, 0, 0),
		sys("pidfd_getfd", unix.SYS_PIDFD_GETFD, escEPERM, -1, 0, 0),
		sys("process_vm_readv", unix.SYS_PROCESS_VM_READV, escEPERM, 0, 0, 0, 0, 0, 0),
		sys("clone3", unix.SYS_CLONE3, escENOSYS, 0, 0),
		{name: "capabilities", op: "status", args: []string{"CapEff"}, expect: escBlocked, tierC: true},
		{name: "no-new-privs", op: "status", args: []string{"NoNewPrivs"}, expect: escWorks},
	}
	// init_module is absent from kernels built without modules: ENOSYS
	// there, EPERM from the filter.
	probes = append(probes, sys("init_module", unix.SYS_INIT_MODULE, escEPERM, 0, 0, 0),
		// Last: were they to succeed, they would change what the probes
		// after them see.
		escProbe{name: "mount-tmpfs", op: "mount", args: []string{"mnt"}, expect: escEPERM},
		escProbe{name: "unshare-newns", op: "unshare", args: []string{strconv.Itoa(unix.CLONE_NEWNS)}, expect: escEPERM},
		escProbe{name: "unshare-newuser", op: "unshare", args: []string{strconv.Itoa(unix.CLONE_NEWUSER)}, expect: escEPERM, control: true},
	)
	var kept []escProbe
	for _, p := range probes {
		if p.tierC && !e.tierC() {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// refusedByStockade reports whether a connection to agent.sock or
// admin.sock from inside a call failed, or was refused before the handshake
// (an accepted one would have the server's hello, naming its software).
func refusedByStockade(r escResult) bool {
	return !r.ok || strings.Contains(r.text, "processes of a call may not") && !strings.Contains(r.text, "stockade-")
}

func escHelperProbes(t *testing.T, e *escEnv) {
	if e.helper == "" {
		t.Skip("no C compiler: the attack program cannot be built")
	}
	probes := escProbes(e)
	// A SysV shared memory segment of the host, with a secret in it.
	shmID, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(shmID, unix.IPC_RMID, nil) })
	seg, err := unix.SysvShmAttach(shmID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	copy(seg, "SHM-SECRET\x00")
	defer unix.SysvShmDetach(seg)
	for i := range probes {
		if probes[i].name == "sysv-shm-outside" {
			probes[i].args = []string{strconv.Itoa(shmID)}
		}
	}

	// A POSIX message queue of the host, with a message in it.
	mk := e.runHelperOnHost(t, []escProbe{{name: "mq", op: "mq", args: []string{e.mqName(), "create"}}})
	if !mk["mq"].ok {
		t.Fatalf("making a message queue: %s", mk["mq"])
	}
	t.Cleanup(func() { e.runHelperOnHost(t, []escProbe{{name: "mq", op: "mq", args: []string{e.mqName(), "unlink"}}}) })

	// Some file activity on the host while the call watches for it.
	stop := make(chan struct{})
	var activity sync.WaitGroup
	activity.Add(1)
	go func() {
		defer activity.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				_, _ = os.ReadFile(filepath.Join(e.outside, "secret.txt"))
			}
		}
	}()
	before := map[*escCounter]int64{&e.tcp: e.tcp.n.Load(), &e.udp: e.udp.n.Load(), &e.abs: e.abs.n.Load(), &e.named: e.named.n.Load()}
	out, res := e.runHelper(t, e.ws, probes)
	close(stop)
	activity.Wait()
	time.Sleep(100 * time.Millisecond) // datagrams in flight
	t.Logf("%s: helper output:\n%s", e.mode, out.Stdout)

	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			r, ok := res[p.name]
			if !ok {
				t.Fatalf("%s: no result for %s:\n%s\n%s", e.mode, p.name, out.Stdout, out.Stderr)
			}
			succeeded := false
			switch {
			case p.name == "capabilities":
				succeeded = !strings.HasSuffix(r.text, "\t0000000000000000")
			case p.name == "no-new-privs":
				if !strings.HasSuffix(r.text, "\t1") {
					t.Errorf("%s: %s", e.mode, r.text)
				}
			case p.name == "ioctl-tcgets":
				if r.errno != syscall.ENOTTY {
					t.Errorf("%s: TCGETS on /dev/null: want ENOTTY (ioctl allowed), got %s", e.mode, r)
				}
			case p.expect == escWorks:
				if !r.ok {
					t.Errorf("%s: %s does not work: %s", e.mode, p.name, r)
				}
			case p.expect == escRefused:
				succeeded = !refusedByStockade(r)
			default:
				succeeded = r.ok
			}
			if succeeded {
				attackSucceeded(t, e, p.name, r.text) // a known hole ends the subtest here
			}
			switch {
			case succeeded:
			case p.expect == escEPERM && r.errno != syscall.EPERM:
				t.Errorf("%s: %s: want EPERM from the seccomp filter, got %s", e.mode, p.name, r)
			case p.expect == escENOSYS && r.errno != syscall.ENOSYS:
				t.Errorf("%s: %s: want ENOSYS from the seccomp filter, got %s", e.mode, p.name, r)
			}
			if p.check != nil {
				p.check(t, e, r)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "written.txt")); err != nil || string(b) != "PWNED\n" {
		t.Errorf("%s: the write in the workspace did not reach the host: %q %v", e.mode, b, err)
	}
	// No listener saw anything from the call (except where a known hole let
	// the helper through: its own subtest says so).
	for c, name := range map[*escCounter]string{&e.tcp: "tcp-loopback", &e.udp: "udp-loopback", &e.abs: "connect-abstract-outside", &e.named: "connect-named-socket-outside"} {
		if n := c.n.Load() - before[c]; n != 0 && !res[name].ok {
			t.Errorf("%s: the %s listener saw %d connections or datagrams, yet the helper reports failure", e.mode, name, n)
		}
		if n := c.n.Load() - before[c]; n != 0 && name != "connect-named-socket-outside" && e.tierC() {
			t.Errorf("%s: the %s listener outside was reached %d times", e.mode, name, n)
		}
	}
	for _, name := range []string{"connect-agent-sock", "connect-admin-sock"} {
		if res[name].ok && !e.s.waitLog("a process of a call") {
			t.Errorf("%s: %s connected and the refusal was not logged", e.mode, name)
		}
	}

	// Controls: outside the sandbox the kernel lets the same operations
	// through, so the sandbox is what stopped them.
	var controls []escProbe
	for _, p := range probes {
		if p.control {
			controls = append(controls, p)
		}
	}
	host := e.runHelperOnHost(t, controls)
	for _, p := range controls {
		r := host[p.name]
		if r.ok {
			t.Logf("%s: control %s: ok", e.mode, p.name) // not its output: it may be /etc/shadow
		} else {
			t.Logf("%s: control %s", e.mode, r)
		}
		if os.Geteuid() == 0 && !r.ok && (r.errno == syscall.EPERM || r.errno == syscall.EACCES) {
			t.Errorf("control %s failed outside the sandbox too: the probe proves nothing: %s", p.name, r)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if os.Geteuid() == 0 && e.tcp.n.Load() == before[&e.tcp] {
		t.Errorf("the TCP listener never saw the control's connection: the probe proves nothing")
	}
}

// escX32: a system call of the x32 ABI kills the target.
func escX32(t *testing.T, e *escEnv) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is an amd64 ABI")
	}
	if e.helper == "" {
		t.Skip("no C compiler")
	}
	p := escProbe{name: "x32-getpid", op: "syscall", args: []string{strconv.Itoa(unix.SYS_GETPID | 0x40000000)}}
	out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, Args: []string{e.helper, "before=hello", p.arg()}})
	if strings.Contains(string(out.Stdout), "x32-getpid: ok") || !escKilledBy(e, out, syscall.SIGSYS) {
		t.Fatalf("%s: x32 call: %s %s %q", e.mode, out.Status, out.Signal, out.Stdout)
	}
	if !strings.Contains(string(out.Stdout), "before: ok") {
		t.Fatalf("%s: the helper did not run: %q", e.mode, out.Stdout)
	}
}

// escSetuid: a setuid-root copy of a program gains nothing (no_new_privs).
func escSetuid(t *testing.T, e *escEnv) {
	if e.helper == "" {
		t.Skip("no C compiler")
	}
	ws := t.TempDir()
	b, err := os.ReadFile(e.helper)
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(ws, "suid-helper")
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	probes := []string{
		escProbe{name: "cap", op: "status", args: []string{"CapEff"}}.arg(),
		escProbe{name: "uid", op: "status", args: []string{"Uid"}}.arg(),
	}
	plain := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: append([]string{e.helper}, probes...)})
	setuid := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: append([]string{suid}, probes...)})
	if plain.Status != ipc.StatusOK || setuid.Status != ipc.StatusOK {
		t.Fatalf("%s: %+v %+v", e.mode, plain, setuid)
	}
	if string(plain.Stdout) != string(setuid.Stdout) {
		t.Fatalf("%s: a setuid program changed the target's credentials:\nplain:\n%s\nsetuid:\n%s", e.mode, plain.Stdout, setuid.Stdout)
	}
}

// escSibling: a call cannot touch another call running at the same time.
func escSibling(t *testing.T, e *escEnv) {
	if e.helper == "" {
		t.Skip("no C compiler")
	}
	wsA := t.TempDir()
	marker := newMarker()
	done := make(chan *ipc.Outcome, 1)
	go func() {
		out, _ := e.s.call(&ipc.CallRequest{Tool: "process.run", Workspace: wsA, TimeoutMS: 20000, Args: []string{"/bin/sh", "-c",
			fmt.Sprintf(`echo SIBLING-SECRET > "$TMPDIR/s" && echo "$TMPDIR" > tmpdir && exec sleep %d`, marker)}})
		done <- out
	}()
	waitFile(t, filepath.Join(wsA, "tmpdir"))
	var pids []int
	for end := time.Now().Add(5 * time.Second); len(pids) == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		pids = survivors(marker)
	}
	if len(pids) != 1 {
		t.Fatalf("%s: the sibling call is not running: %v", e.mode, pids)
	}
	pidA := pids[0]
	tmpA, _ := os.ReadFile(filepath.Join(wsA, "tmpdir"))
	probes := []escProbe{
		{name: "sibling-kill", op: "kill", args: []string{strconv.Itoa(pidA), "0"}},
		{name: "sibling-kill-9", op: "kill", args: []string{strconv.Itoa(pidA), "9"}},
		{name: "sibling-ptrace", op: "ptrace", args: []string{strconv.Itoa(pidA)}},
		{name: "sibling-environ", op: "read", args: []string{fmt.Sprintf("/proc/%d/environ", pidA)}},
		{name: "sibling-tmp", op: "read", args: []string{filepath.Join(strings.TrimSpace(string(tmpA)), "s")}},
		{name: "sibling-workspace", op: "read", args: []string{filepath.Join(wsA, "tmpdir")}},
	}
	_, res := e.runHelper(t, e.ws, probes)
	aliveA := alive(pidA)
	_ = syscall.Kill(pidA, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the sibling call did not end")
	}
	if !aliveA {
		t.Errorf("%s: the sibling call's target was killed from the other call", e.mode)
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			r, ok := res[p.name]
			if !ok {
				t.Fatalf("no result for %s", p.name)
			}
			if r.ok {
				attackSucceeded(t, e, p.name, r.text)
			}
			if strings.Contains(r.text, "SIBLING-SECRET") {
				t.Errorf("%s: read the sibling's secret: %s", e.mode, r.text)
			}
		})
	}
}

// escResources: limits of a call's files, memory, output and CPU.
func escResources(t *testing.T, e *escEnv) {
	t.Run("disk fill", func(t *testing.T) {
		out := e.sh(t, `head -c 2097152 /dev/zero > fill; echo "ws=$?"; head -c 2097152 /dev/zero > "$TMPDIR/fill"; echo "tmp=$?"; exec head -c 2097152 /dev/zero > fill2`)
		if !escKilledBy(e, out, syscall.SIGXFSZ) || !strings.Contains(string(out.Stdout), "ws=153\ntmp=153\n") {
			t.Fatalf("%s: disk fill: %s %s %q %q", e.mode, out.Status, out.Signal, out.Stdout, out.Stderr)
		}
		for _, f := range []string{"fill", "fill2"} {
			if fi, err := os.Stat(filepath.Join(e.ws, f)); err != nil || fi.Size() > 1<<20 {
				t.Errorf("%s: %s past the file size limit: %v", e.mode, f, err)
			}
		}
		// Counterpart: below the limit a file is written whole.
		out = e.sh(t, `head -c 1000000 /dev/zero > small && wc -c < small`)
		if out.Status != ipc.StatusOK || strings.TrimSpace(string(out.Stdout)) != "1000000" {
			t.Fatalf("%s: a file under the limit: %+v", e.mode, out)
		}
	})
	t.Run("output flood", func(t *testing.T) {
		for _, args := range [][]string{{"yes"}, {"/bin/sh", "-c", "yes >&2"}} {
			out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, MaxOutput: 1000, Args: args})
			if out.Status != ipc.StatusQuotaExceeded || !out.Truncated || len(out.Stdout)+len(out.Stderr) != 1000 {
				t.Errorf("%s: %v: %s truncated=%v %d bytes", e.mode, args, out.Status, out.Truncated, len(out.Stdout)+len(out.Stderr))
			}
		}
		out := e.call(t, &ipc.CallRequest{Tool: "process.run", Workspace: e.ws, MaxOutput: 1000, Args: []string{"/bin/sh", "-c", "yes | head -c 1000"}})
		if out.Status != ipc.StatusOK || out.Truncated || len(out.Stdout) != 1000 {
			t.Errorf("%s: output at the quota: %s truncated=%v", e.mode, out.Status, out.Truncated)
		}
	})
}

// startEscLifetime starts the calls that end only by a limit (timeout, CPU,
// memory, pids) at once, and returns the test that checks them.
func startEscLifetime(t *testing.T, e *escEnv) func(t *testing.T) {
	type result struct {
		out   *ipc.Outcome
		err   error
		took  time.Duration
		marks []string
	}
	var wg sync.WaitGroup
	results := map[string]*result{}
	run := func(name string, req *ipc.CallRequest, marks ...string) {
		r := &result{marks: marks}
		results[name] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			r.out, r.err = e.s.call(req)
			r.took = time.Since(start)
		}()
	}
	id := newMarker()
	busy := fmt.Sprintf("esc-busy-%d", id)
	run("busy loop and setsid busy grandchild", &ipc.CallRequest{Tool: "process.run", TimeoutMS: 1000, Args: []string{"/bin/sh", "-c",
		`setsid sh -c 'while :; do :; done' "$0" </dev/null >/dev/null 2>&1 & while :; do :; done`, busy}}, busy)
	sleeperWS := t.TempDir()
	sleeper := newMarker()
	run("sleeping setsid grandchild", &ipc.CallRequest{Tool: "process.run", Workspace: sleeperWS, TimeoutMS: 3000, Args: []string{"/bin/sh", "-c", treeScript(sleeper)}},
		fmt.Sprintf("sleep\x00%d", sleeper))
	cpu := fmt.Sprintf("esc-cpu-%d", id)
	run("cpu limit", &ipc.CallRequest{Tool: "sh-cpu1", Args: []string{"-c", `while :; do :; done`, cpu}}, cpu)
	run("memory bomb", &ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sh", "-c", `x=a; while :; do x="$x$x"; done`}})
	bomb := fmt.Sprintf("esc-bomb-%d", id)
	if e.cgroup {
		run("fork bomb", &ipc.CallRequest{Tool: "process.run", TimeoutMS: 2000, Args: []string{"/bin/bash", "-c",
			`exec 2>/dev/null; :(){ :|:& };:; while :; do sleep 1; done`, bomb}}, bomb)
	}
	return func(t *testing.T) {
		wg.Wait()
		check := func(name string, f func(t *testing.T, out *ipc.Outcome)) {
			t.Run(name, func(t *testing.T) {
				r := results[name]
				if r == nil {
					t.Skip("not run")
				}
				if r.err != nil {
					left := escKillAll(r.marks)
					if name == "fork bomb" {
						attackSucceeded(t, e, "fork-bomb-kills-executor", fmt.Sprintf("the call failed (%v) and %d processes of the bomb outlived it (killed by the test)", r.err, left))
					}
					t.Fatalf("%s: %v (%d processes of the call outlived it)", e.mode, r.err, left)
				}
				t.Logf("%s: %s %s exit %d after %v, stderr %.200q", e.mode, r.out.Status, r.out.Signal, r.out.ExitCode, r.took.Round(time.Millisecond), r.out.Stderr)
				f(t, r.out)
				if r.took > 25*time.Second {
					t.Errorf("%s: the call took %v", e.mode, r.took)
				}
				if left := escKillAll(r.marks); left > 0 {
					t.Errorf("%s: %d processes of the call survived it", e.mode, left)
				}
			})
		}
		check("busy loop and setsid busy grandchild", func(t *testing.T, out *ipc.Outcome) {
			if out.Status != ipc.StatusTimedOut {
				t.Errorf("%s: status %s", e.mode, out.Status)
			}
		})
		check("sleeping setsid grandchild", func(t *testing.T, out *ipc.Outcome) {
			if out.Status != ipc.StatusTimedOut {
				t.Errorf("%s: status %s", e.mode, out.Status)
			}
			if _, err := os.Stat(filepath.Join(sleeperWS, "ready")); err != nil {
				t.Error("the grandchild never started: the test proves nothing")
			}
		})
		check("cpu limit", func(t *testing.T, out *ipc.Outcome) {
			if !escKilledBy(e, out, syscall.SIGXCPU) && !escKilledBy(e, out, syscall.SIGKILL) {
				t.Fatalf("%s: a busy loop past cpu_seconds was not stopped by the CPU limit: %s %s exit %d", e.mode, out.Status, out.Signal, out.ExitCode)
			}
			if out.Status != ipc.StatusQuotaExceeded {
				if e.bwrap() && !escStrict() {
					t.Skipf("BUG (%s): the CPU limit killed the target (exit %d) but the outcome says %s, not quota_exceeded: under bwrap the executor sees bwrap's exit status, 128+signal, never the signal", e.mode, out.ExitCode, out.Status)
				}
				t.Errorf("%s: a busy loop past cpu_seconds: %s %s exit %d, want quota_exceeded", e.mode, out.Status, out.Signal, out.ExitCode)
			}
		})
		check("memory bomb", func(t *testing.T, out *ipc.Outcome) {
			if out.Status == ipc.StatusOK || out.Status == ipc.StatusTimedOut {
				t.Errorf("%s: memory bomb: %s", e.mode, out.Status)
			}
			if e.cgroup && out.Status != ipc.StatusQuotaExceeded {
				t.Errorf("%s: memory bomb with a cgroup: %s, want quota_exceeded", e.mode, out.Status)
			}
			t.Logf("%s: memory bomb: %s %s exit %d, max RSS %d KiB", e.mode, out.Status, out.Signal, out.ExitCode, out.Usage.MaxRSSKiB)
		})
		if !e.cgroup {
			t.Run("fork bomb", func(t *testing.T) {
				if os.Geteuid() == 0 {
					t.Skip("HOLE: calls get no cgroup here and RLIMIT_NPROC does not bind uid 0: nothing bounds a fork bomb, so it is not run")
				}
				t.Skip("calls get no cgroup here: the bomb would be bounded only by RLIMIT_NPROC, which this test process shares")
			})
			return
		}
		check("fork bomb", func(t *testing.T, out *ipc.Outcome) {
			if out.Status != ipc.StatusTimedOut && out.Status != ipc.StatusQuotaExceeded {
				t.Errorf("%s: fork bomb: %s", e.mode, out.Status)
			}
		})
	}
}

// escKilledBy reports whether the target died of sig. Under bwrap the
// executor sees bwrap's exit, which reports its child's death by a signal as
// exit status 128+N.
func escKilledBy(e *escEnv, out *ipc.Outcome, sig syscall.Signal) bool {
	return out.Signal == unix.SignalName(sig) || e.bwrap() && out.Status == ipc.StatusExited && out.ExitCode == 128+int(sig)
}

// escKillAll kills the processes whose command line holds one of marks
// (processes of a call that outlived it: a fork bomb among them), until none
// is left, and returns how many it found at first.
func escKillAll(marks []string) int {
	first := -1
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var pids []int
		for _, m := range marks {
			pids = append(pids, escProcsWith(m)...)
		}
		if first < 0 {
			first = len(pids)
		}
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	return first
}

// escProcsWith lists the live processes whose command line contains s.
func escProcsWith(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestEscapeLoaderEnv: a request cannot set the target's environment, and a
// configuration that sets loader or interpreter variables is refused.
func TestEscapeLoaderEnv(t *testing.T) {
	dangerous := []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH", "BASH_ENV", "ENV",
		"PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS",
		"GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL", "IFS", "PATH", "HOME", "TMPDIR", "MALLOC_CHECK_"}
	tool := func(name, value string) string {
		return fmt.Sprintf("[[tool]]\nname = \"t\"\nkind = \"process\"\ncommand = \"/usr/bin/printenv\"\nenv = { %s = %q }\n", name, value)
	}
	for _, name := range dangerous {
		if _, err := broker.ParseConfig([]byte(tool(name, "/tmp/x.so"))); !errors.Is(err, broker.ErrConfig) {
			t.Errorf("a tool setting %s: %v", name, err)
		}
	}
	if _, err := broker.ParseConfig([]byte(tool("GREETING", "hi"))); err != nil {
		t.Fatalf("a harmless variable is refused: %v", err)
	}

	// The whole system: a broker given such a configuration does not serve.
	t.Run("system", func(t *testing.T) {
		runtimeDir, err := os.MkdirTemp("", "stk-rt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(runtimeDir) })
		state := t.TempDir()
		cfg := filepath.Join(state, "stockade.toml")
		if err := os.WriteFile(cfg, []byte(tool("LD_PRELOAD", "/tmp/x.so")), 0o600); err != nil {
			t.Fatal(err)
		}
		s := &system{t: t, runtime: runtimeDir, state: state, socket: filepath.Join(runtimeDir, ipc.AgentSocketName), logs: &syncBuffer{}, done: make(chan struct{})}
		s.cmd = exec.Command(filepath.Join(binDir, "stockaded"), "--single-user", "--runtime-dir", runtimeDir, "--state-dir", state, "--config", cfg)
		s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		t.Cleanup(s.stop)
		if !s.waitLog(`env \"LD_PRELOAD\": may not be set for a target`) {
			t.Fatalf("no configuration error logged:\n%s", s.logs.String())
		}
		if strings.Contains(s.logs.String(), "broker serving") {
			t.Fatalf("the broker served with LD_PRELOAD configured:\n%s", s.logs.String())
		}
	})

	s := startSystem(t, toolsConfig) // interpreters and launchers not allowed
	t.Run("launcher", func(t *testing.T) {
		for _, args := range [][]string{
			{"env", "LD_PRELOAD=/tmp/x.so", "/bin/true"},
			{"/usr/bin/env", "-i", "LD_PRELOAD=/tmp/x.so", "/bin/true"},
			{"/bin/sh", "-c", "LD_PRELOAD=/tmp/x.so true"},
		} {
			_, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: args})
			wantClass(t, err, ipc.ClassDenied)
		}
		out, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "hi"}})
		if err != nil || out.Status != ipc.StatusOK {
			t.Fatalf("plain echo: %+v %v", out, err)
		}
	})
	t.Run("env field in a request", func(t *testing.T) {
		// A call request has no environment: one that carries an "env" map
		// is malformed, and the connection is closed.
		type smuggled struct {
			Tool string            `msgpack:"tool"`
			Args []string          `msgpack:"args"`
			Env  map[string]string `msgpack:"env"`
		}
		for _, tc := range []struct {
			name string
			body any
			want ipc.ErrorClass
		}{
			{"with env", smuggled{Tool: "process.run", Args: []string{"/usr/bin/printenv"}, Env: map[string]string{"LD_PRELOAD": "/tmp/x.so"}}, ipc.ClassProtocol},
			{"without", ipc.CallRequest{Tool: "process.run", Args: []string{"/usr/bin/printenv"}}, ""},
		} {
			nc, err := net.Dial("unix", s.socket)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := ipc.EncodeEnvelope(0, ipc.KindHello, ipc.Hello{Proto: ipc.ProtocolName, Version: ipc.ProtocolVersion, Channel: ipc.ChannelAgent})
			c, _ := ipc.EncodeEnvelope(1, ipc.KindCall, tc.body)
			if _, err := nc.Write(ipc.AppendFrame(ipc.AppendFrame(nil, h), c)); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			var last *ipc.Message
			for {
				b, err := ipc.ReadFrame(nc, 1<<20)
				if err != nil {
					break
				}
				if last, err = ipc.DecodeEnvelope(b); err != nil {
					t.Fatal(err)
				}
				if last.Kind == ipc.KindCall {
					break
				}
			}
			nc.Close()
			switch {
			case last == nil:
				t.Fatalf("%s: no reply", tc.name)
			case tc.want != "":
				if last.Kind != ipc.KindError || last.Err().Class != tc.want {
					t.Fatalf("%s: last reply %s %+v", tc.name, last.Kind, last.Err())
				}
			default:
				var out ipc.Outcome
				if last.Kind != ipc.KindCall || last.Decode(&out) != nil || out.Status != ipc.StatusOK || strings.Contains(string(out.Stdout), "LD_PRELOAD") {
					t.Fatalf("%s: %s %+v", tc.name, last.Kind, out)
				}
			}
		}
	})
}

// buildEscHelper compiles the attack program with the host's C compiler;
// it returns "" when there is none.
func buildEscHelper(t *testing.T, dir string) string {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Log("no C compiler: the attack program is not built")
		return ""
	}
	src := filepath.Join(dir, "attack.c")
	if err := os.WriteFile(src, []byte(escHelperSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "attack")
	if out, err := exec.Command(cc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling the attack program: %v\n%s", err, out)
	}
	return bin
}

// buildGoHello builds a small Go program that reads a file of the workspace.
func buildGoHello(t *testing.T, dir string) string {
	src := filepath.Join(dir, "gohello.go")
	prog := `package main

import (
	"fmt"
	"os"
)

func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("hello from Go: %s", b)
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gohello")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go program: %v\n%s", err, out)
	}
	return bin
}

// escHelperSource is the attack program. Each argument is name=op:hex:...;
// each prints one line, "name: ok DETAIL" or "name: errno N (TEXT)".
const escHelperSource = `#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <termios.h>

static char *unhex(const char *h) {
	size_t n = strlen(h) / 2;
	char *b = calloc(n + 1, 1);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		b[i] = (char)v;
	}
	return b;
}

static void quote(const char *b, ssize_t n) {
	for (ssize_t i = 0; i < n && i < 200; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c >= 32 && c < 127 && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static void fail(const char *name) {
	int e = errno;
	printf("%s: errno %d (%s)\n", name, e, strerror(e));
}

static void sock_unix(const char *name, const char *path, const char *payload, size_t plen) {
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0) { fail(name); return; }
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	socklen_t len = sizeof a;
	if (path[0] == '@') {
		strncpy(a.sun_path + 1, path + 1, sizeof a.sun_path - 2);
		len = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	} else {
		strncpy(a.sun_path, path, sizeof a.sun_path - 1);
	}
	if (connect(fd, (struct sockaddr *)&a, len) < 0) { fail(name); close(fd); return; }
	/* A server that refuses may close before the payload is written: read its answer anyway. */
	int wrote = plen == 0 || write(fd, payload, plen) == (ssize_t)plen;
	struct timeval tv = {.tv_sec = 2};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char buf[4096];
	ssize_t got = 0, n;
	while (got < (ssize_t)sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) > 0)
		got += n;
	close(fd);
	printf("%s: ok connected, %s, read %zd: ", name, wrote ? "wrote" : "write failed", got);
	quote(buf, got);
	putchar('\n');
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		char *spec = strdup(argv[i]), *save = NULL;
		char *eq = strchr(spec, '=');
		if (!eq) { printf("?: bad spec %s\n", spec); continue; }
		*eq = 0;
		char *name = spec, *op = strtok_r(eq + 1, ":", &save), *a[8] = {0};
		size_t alen[8] = {0};
		for (int k = 0; k < 8; k++) {
			char *h = strtok_r(NULL, ":", &save);
			if (!h) break;
			alen[k] = strlen(h) / 2;
			a[k] = unhex(h);
		}
		if (!op) { printf("%s: errno 22 (no op)\n", name); continue; }
		errno = 0;
		if (!strcmp(op, "hello")) {
			printf("%s: ok hello from C\n", name);
		} else if (!strcmp(op, "read")) {
			int fd = open(a[0], O_RDONLY | O_NONBLOCK);
			if (fd < 0) { fail(name); continue; }
			char buf[256];
			ssize_t n = read(fd, buf, sizeof buf);
			if (n < 0) { fail(name); close(fd); continue; }
			close(fd);
			printf("%s: ok read %zd: ", name, n);
			quote(buf, n);
			putchar('\n');
		} else if (!strcmp(op, "find")) {
			/* read a whole file, and say whether it holds a[1] */
			int fd = open(a[0], O_RDONLY);
			if (fd < 0) { fail(name); continue; }
			static char buf[1 << 20];
			ssize_t got = 0, n;
			while (got < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
				got += n;
			close(fd);
			if (got < 0) got = 0;
			char *hit = memmem(buf, got, a[1], alen[1]);
			printf("%s: ok read %zd bytes, ", name, got);
			if (hit) { printf("found: "); quote(hit, strnlen(hit, 80)); putchar('\n'); }
			else printf("no %s in them\n", a[1]);
		} else if (!strcmp(op, "ls")) {
			DIR *d = opendir(a[0]);
			if (!d) { fail(name); continue; }
			int n = 0;
			while (readdir(d)) n++;
			closedir(d);
			printf("%s: ok %d entries\n", name, n);
		} else if (!strcmp(op, "write")) {
			int fd = open(a[0], O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd < 0) { fail(name); continue; }
			if (write(fd, "PWNED\n", 6) != 6) { fail(name); close(fd); continue; }
			close(fd);
			printf("%s: ok wrote\n", name);
		} else if (!strcmp(op, "open")) {
			/* open for reading and close: the check made at open(2), nothing read */
			int fd = open(a[0], O_RDONLY);
			if (fd < 0) { fail(name); continue; }
			close(fd);
			printf("%s: ok opened (nothing read)\n", name);
		} else if (!strcmp(op, "openw")) {
			int fd = open(a[0], O_WRONLY);
			if (fd < 0) { fail(name); continue; }
			close(fd);
			printf("%s: ok opened for writing (nothing written)\n", name);
		} else if (!strcmp(op, "link")) {
			if (link(a[0], a[1]) < 0) { fail(name); continue; }
			printf("%s: ok linked\n", name);
		} else if (!strcmp(op, "symlink")) {
			if (symlink(a[0], a[1]) < 0) { fail(name); continue; }
			printf("%s: ok\n", name);
		} else if (!strcmp(op, "rename")) {
			if (rename(a[0], a[1]) < 0) { fail(name); continue; }
			printf("%s: ok renamed\n", name);
		} else if (!strcmp(op, "mknod")) {
			if (mknod(a[0], S_IFCHR | 0600, makedev(atoi(a[1]), atoi(a[2]))) < 0) { fail(name); continue; }
			int fd = open(a[0], O_RDONLY | O_NONBLOCK);
			if (fd < 0) { printf("%s: ok made the node; open: errno %d (%s)\n", name, errno, strerror(errno)); unlink(a[0]); continue; }
			char buf[8192];
			ssize_t n = read(fd, buf, sizeof buf);
			close(fd);
			unlink(a[0]);
			printf("%s: ok made and opened the node, read %zd: ", name, n);
			if (n > 0) quote(buf, n);
			putchar('\n');
		} else if (!strcmp(op, "ptrace")) {
			pid_t pid = atoi(a[0]);
			if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0) { fail(name); continue; }
			ptrace(PTRACE_DETACH, pid, 0, 0);
			printf("%s: ok attached\n", name);
		} else if (!strcmp(op, "vmread")) {
			char local[8];
			struct iovec l = {local, sizeof local}, r = {(void *)0x10000, sizeof local};
			if (syscall(SYS_process_vm_readv, atoi(a[0]), &l, 1, &r, 1, 0) < 0) { fail(name); continue; }
			printf("%s: ok read remote memory\n", name);
		} else if (!strcmp(op, "kill")) {
			int pid = !strcmp(a[0], "ppid") ? getppid() : !strcmp(a[0], "self") ? getpid() : atoi(a[0]);
			if (kill(pid, atoi(a[1])) < 0) { fail(name); continue; }
			printf("%s: ok signalled %d\n", name, pid);
		} else if (!strcmp(op, "unix")) {
			sock_unix(name, a[0], a[1] ? a[1] : "", alen[1]);
		} else if (!strcmp(op, "tcp") || !strcmp(op, "udp")) {
			int udp = op[0] == 'u';
			int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
			if (fd < 0) { fail(name); continue; }
			struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(atoi(a[1]))};
			inet_pton(AF_INET, a[0], &s.sin_addr);
			int rc = udp ? (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&s, sizeof s) : connect(fd, (struct sockaddr *)&s, sizeof s);
			if (rc < 0) { fail(name); close(fd); continue; }
			close(fd);
			printf("%s: ok %s\n", name, udp ? "sent" : "connected");
		} else if (!strcmp(op, "socket")) {
			int fd = socket(atoi(a[0]), atoi(a[1]), 0);
			if (fd < 0) { fail(name); continue; }
			close(fd);
			printf("%s: ok\n", name);
		} else if (!strcmp(op, "tiocsti")) {
			char c = 'x';
			int fd = 0;
			unsigned long req = TIOCSTI;
			if (!strcmp(a[0], "fd0wide")) req |= 1UL << 32;
			if (!strcmp(a[0], "tty")) {
				if ((fd = open("/dev/tty", O_RDWR)) < 0) { fail(name); continue; }
			} else if (!strcmp(a[0], "pty")) {
				int m = posix_openpt(O_RDWR | O_NOCTTY);
				if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) { fail(name); continue; }
				if ((fd = open(ptsname(m), O_RDWR | O_NOCTTY)) < 0) { fail(name); continue; }
			}
			if (syscall(SYS_ioctl, fd, req, &c) < 0) { fail(name); continue; }
			printf("%s: ok injected a character\n", name);
		} else if (!strcmp(op, "tcgets")) {
			struct termios t;
			if (ioctl(0, TCGETS, &t) < 0) { fail(name); continue; }
			printf("%s: ok\n", name);
		} else if (!strcmp(op, "unshare")) {
			if (unshare(atoi(a[0])) < 0) { fail(name); continue; }
			printf("%s: ok unshared\n", name);
		} else if (!strcmp(op, "mount")) {
			if (mount("none", a[0], "tmpfs", 0, NULL) < 0) { fail(name); continue; }
			umount(a[0]);
			printf("%s: ok mounted\n", name);
		} else if (!strcmp(op, "syscall")) {
			long v[7] = {0};
			for (int k = 0; k < 7 && a[k]; k++) v[k] = strtol(a[k], NULL, 0);
			long r = syscall(v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
			if (r < 0) { fail(name); continue; }
			printf("%s: ok returned %ld\n", name, r);
		} else if (!strcmp(op, "status")) {
			FILE *f = fopen("/proc/self/status", "r");
			char line[256];
			int found = 0;
			while (f && fgets(line, sizeof line, f))
				if (!strncmp(line, a[0], strlen(a[0])) && line[strlen(a[0])] == ':') {
					line[strcspn(line, "\n")] = 0;
					printf("%s: ok %s\n", name, line);
					found = 1;
				}
			if (f) fclose(f);
			if (!found) printf("%s: errno 2 (no such line)\n", name);
		} else if (!strcmp(op, "shm")) {
			char *p = shmat(atoi(a[0]), NULL, SHM_RDONLY);
			if (p == (void *)-1) { fail(name); continue; }
			printf("%s: ok attached: ", name);
			quote(p, strnlen(p, 64));
			putchar('\n');
			shmdt(p);
		} else if (!strcmp(op, "mq")) {
			/* a POSIX message queue: create (with a message in it), open (and read it), unlink */
			if (!strcmp(a[1], "unlink")) {
				if (mq_unlink(a[0]) < 0) { fail(name); continue; }
				printf("%s: ok unlinked\n", name);
				continue;
			}
			int create = !strcmp(a[1], "create");
			mqd_t q = create ? mq_open(a[0], O_CREAT | O_RDWR | O_NONBLOCK, 0600, NULL) : mq_open(a[0], O_RDWR | O_NONBLOCK);
			if (q == (mqd_t)-1) { fail(name); continue; }
			if (create) {
				if (mq_send(q, "MQ-SECRET", 9, 0) < 0) { fail(name); mq_close(q); continue; }
				printf("%s: ok created\n", name);
			} else {
				char buf[65536];
				ssize_t n = mq_receive(q, buf, sizeof buf, NULL);
				printf("%s: ok opened, received %zd: ", name, n);
				if (n > 0) quote(buf, n);
				putchar('\n');
			}
			mq_close(q);
		} else if (!strcmp(op, "fanotify")) {
			/* Watch every open(2) on the filesystem that holds the workspace. */
			int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY);
			if (fd < 0) { fail(name); continue; }
			if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, ".") < 0) { fail(name); close(fd); continue; }
			int events = 0, others = 0;
			char buf[8192];
			for (int k = 0; k < 6; k++) {
				usleep(50000);
				ssize_t n;
				while ((n = read(fd, buf, sizeof buf)) != 0) {
					if (n < 0) {
						if (errno == EAGAIN) break;
						events++, others++; /* an event whose file the sandbox refused */
						continue;
					}
					struct fanotify_event_metadata *m = (void *)buf;
					for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
						events++;
						if (m->pid != getpid()) others++;
						if (m->fd >= 0) close(m->fd);
					}
				}
			}
			close(fd);
			printf("%s: ok watching the whole filesystem: %d events, %d of other processes\n", name, events, others);
		} else if (!strcmp(op, "rlimit")) {
			struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
			if (setrlimit(RLIMIT_FSIZE, &r) < 0) { fail(name); continue; }
			printf("%s: ok raised the hard RLIMIT_FSIZE\n", name);
		} else {
			printf("%s: errno 22 (unknown op %s)\n", name, op);
		}
	}
	return 0;
}
`
