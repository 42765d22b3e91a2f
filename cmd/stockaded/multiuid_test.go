//go:build linux

package main

// Multi-uid mode on the real binaries, as root: the roles' credentials read
// from /proc, and attacks from targets and (through the test hooks compiled
// into these binaries only) from inside the broker and the verifier.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// multiRanges gives each system of a test run its own executor uids: a
// supervisor kills every process of its range when it starts.
var multiRanges atomic.Uint32

type multiSystem struct {
	*system
	base        string
	first, last uint32
}

// startMultiUID runs `stockaded setup` and starts stockaded as root in
// multi-uid mode with n executor uids. before, if set, runs between the two
// with the state directory.
func startMultiUID(t *testing.T, config string, n uint32, before func(state string)) *multiSystem {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("multi-uid mode needs root")
	}
	base, err := os.MkdirTemp("", "stk-multi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	first := 60800 + multiRanges.Add(1)*20
	m := &multiSystem{base: base, first: first, last: first + n - 1}
	cfg := filepath.Join(base, "stockade.toml")
	body := fmt.Sprintf("executor_uid_range = [%d, %d]\npolicy_dir = %q\n", m.first, m.last, permissivePolicy) + config
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runtime, state := filepath.Join(base, "run"), filepath.Join(base, "state")
	for range 2 { // the second run finds everything in place
		out, err := exec.Command(filepath.Join(binDir, "stockaded"), "setup", "--config", cfg, "--runtime-dir", runtime, "--state-dir", state).CombinedOutput()
		if err != nil {
			t.Fatalf("stockaded setup: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "fixed") {
			t.Fatalf("setup fixed what it had made:\n%s", out)
		}
	}
	if before != nil {
		before(state)
	}
	s := &system{t: t, runtime: runtime, state: state, socket: filepath.Join(runtime, ipc.AgentSocketName), logs: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(filepath.Join(binDir, "stockaded"), "--config", cfg, "--runtime-dir", runtime, "--state-dir", state)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("stockaded logs:\n%s", s.logs.String())
		}
	})
	s.waitReady()
	m.system = s
	return m
}

// TestMultiUIDConfigCheckedFirst: as root, `stockaded` (multi-uid) and
// `stockaded setup` refuse a configuration file that others could have
// written, or that lives in a directory others could write, before reading
// a byte of it: the file here is not even TOML, and the error must be the
// ownership one.
func TestMultiUIDConfigCheckedFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("multi-uid mode needs root")
	}
	for _, tc := range []struct {
		name             string
		dirMode, cfgMode os.FileMode
	}{
		{"file writable by others", 0o755, 0o666},
		{"file writable by its group", 0o755, 0o664},
		{"directory writable by others", 0o777, 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "etc")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "stockade.toml")
			if err := os.WriteFile(cfg, []byte("this is = = not TOML ]]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(cfg, tc.cfgMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.dirMode); err != nil {
				t.Fatal(err)
			}
			runtime, state := filepath.Join(base, "run"), filepath.Join(base, "state")
			for _, args := range [][]string{
				{"setup", "--config", cfg, "--runtime-dir", runtime, "--state-dir", state},
				{"--config", cfg, "--runtime-dir", runtime, "--state-dir", state},
			} {
				out, err := exec.Command(filepath.Join(binDir, "stockaded"), args...).CombinedOutput()
				if err == nil {
					t.Fatalf("stockaded %v accepted the configuration:\n%s", args, out)
				}
				if !strings.Contains(string(out), "must be root's and not writable by group or others") {
					t.Errorf("stockaded %v: want the ownership error, before any parsing:\n%s", args, out)
				}
				if _, err := os.Stat(runtime); err == nil {
					t.Errorf("stockaded %v made the runtime directory", args)
				}
			}
		})
	}
}

// procStatus reads the fields of /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// assertUnprivileged checks that pid runs as uid (real, effective, saved,
// filesystem), with no capability in any set and NoNewPrivs set.
func assertUnprivileged(t *testing.T, what string, pid int, uid uint32) {
	t.Helper()
	st := procStatus(t, pid)
	u := strconv.FormatUint(uint64(uid), 10)
	if got := strings.Fields(st["Uid"]); len(got) != 4 || slices.ContainsFunc(got, func(v string) bool { return v != u }) {
		t.Errorf("%s (pid %d): Uid %q, want %s everywhere", what, pid, st["Uid"], u)
	}
	if slices.Contains(strings.Fields(st["Gid"]), "0") || slices.Contains(strings.Fields(st["Groups"]), "0") {
		t.Errorf("%s (pid %d): Gid %q Groups %q include root's group", what, pid, st["Gid"], st["Groups"])
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if st[k] != "0000000000000000" {
			t.Errorf("%s (pid %d): %s = %s", what, pid, k, st[k])
		}
	}
	if st["NoNewPrivs"] != "1" {
		t.Errorf("%s (pid %d): NoNewPrivs %q", what, pid, st["NoNewPrivs"])
	}
}

func lookupUID(t *testing.T, name string) uint32 {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.ParseUint(u.Uid, 10, 32)
	return uint32(v)
}

func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// executorOf walks up from a target to the process whose parent is the
// supervisor: the call's executor.
func (m *multiSystem) executorOf(pid int) int {
	for p := pid; p > 1; p = parentOf(p) {
		if parentOf(p) == m.cmd.Process.Pid {
			return p
		}
	}
	return 0
}

// waitTarget waits for the sleep carrying marker and returns its pid.
func waitTarget(t *testing.T, marker int) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if pids := survivors(marker); len(pids) == 1 {
			return pids[0]
		}
	}
	t.Fatalf("the target sleep %d is not running", marker)
	return 0
}

func uidOf(t *testing.T, pid int) uint32 {
	t.Helper()
	f := strings.Fields(procStatus(t, pid)["Uid"])
	v, _ := strconv.ParseUint(f[0], 10, 32)
	return uint32(v)
}

// TestMultiUIDCredentials: the broker, the verifier and each executor run
// under their own uids with nothing to regain root with, and two calls at
// the same time run under two different uids, in each isolation mode.
func TestMultiUIDCredentials(t *testing.T) {
	for _, mode := range isolationModes {
		t.Run(mode.name, func(t *testing.T) {
			m := startMultiUID(t, mode.config, 4, nil)
			st := m.status()
			if st.Mode != "multi-uid" {
				t.Fatalf("mode %q", st.Mode)
			}
			assertUnprivileged(t, "broker", st.Broker.PID, lookupUID(t, "stockade-broker"))
			assertUnprivileged(t, "verifier", st.Verifier.PID, lookupUID(t, "stockade-verifier"))
			if d := procStatus(t, st.Broker.PID)["Groups"]; d != "" {
				t.Errorf("broker supplementary groups %q, want none", d)
			}

			markers := []int{newMarker(), newMarker()}
			var wg sync.WaitGroup
			for _, mk := range markers {
				wg.Go(func() {
					out, err := m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sleep", strconv.Itoa(mk)}})
					if err == nil && out.Status == ipc.StatusOK {
						t.Errorf("sleep %d ended on its own: %+v", mk, out)
					}
				})
			}
			var uids []uint32
			for _, mk := range markers {
				target := waitTarget(t, mk)
				exe := m.executorOf(target)
				if exe == 0 {
					t.Fatalf("no executor above target %d", target)
				}
				uid := uidOf(t, exe)
				if uid < m.first || uid > m.last {
					t.Errorf("executor uid %d outside [%d, %d]", uid, m.first, m.last)
				}
				assertUnprivileged(t, "executor", exe, uid)
				if tu := uidOf(t, target); tu != uid {
					t.Errorf("target uid %d, its executor's %d", tu, uid)
				}
				uids = append(uids, uid)
			}
			if uids[0] == uids[1] {
				t.Errorf("two calls at once share uid %d", uids[0])
			}
			for _, mk := range markers {
				for _, p := range survivors(mk) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			wg.Wait()
		})
	}
}

// TestMultiUIDTargetAttacks: a Tier B target (no Landlock, no namespaces:
// the uids alone separate it) cannot signal the broker, the verifier or
// another call's target, nor read that target's environment or open its
// memory, though it can do each of these to itself; and it cannot make a
// file of its own setuid or setgid (the executor filter), though it can
// change the file's other mode bits.
func TestMultiUIDTargetAttacks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("multi-uid mode needs root")
	}
	bins, err := os.MkdirTemp("", "stk-attack")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bins) })
	if err := os.Chmod(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	helper := buildEscHelper(t, bins)
	if helper == "" {
		t.Skip("no C compiler")
	}
	m := startMultiUID(t, "[run]\ntier = \"B\"\nallow_interpreters = true\n", 4, nil)
	st := m.status()
	marker := newMarker()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sleep", strconv.Itoa(marker)}})
	}()
	sibling := waitTarget(t, marker)
	var probes []escProbe
	for name, pid := range map[string]int{"broker": st.Broker.PID, "verifier": st.Verifier.PID, "sibling": sibling} {
		p := strconv.Itoa(pid)
		probes = append(probes,
			escProbe{name: name + "-kill0", op: "kill", args: []string{p, "0"}},
			escProbe{name: name + "-kill9", op: "kill", args: []string{p, "9"}},
			// Not evidence of the uids: the executor filter refuses
			// ptrace to every target, whatever its uid. Kept so that a
			// filter without it shows here too.
			escProbe{name: name + "-ptrace", op: "ptrace", args: []string{p}},
		)
	}
	// The daemons' /proc/PID files are root's (PR_SET_DUMPABLE=0) whatever
	// the caller's uid, so only the sibling, a program like the attacker,
	// shows what the uids do for these. Opening /proc/PID/mem is where
	// the kernel checks (a read at offset 0 would fail anyway: unmapped).
	sib := strconv.Itoa(sibling)
	probes = append(probes,
		escProbe{name: "sibling-environ", op: "read", args: []string{"/proc/" + sib + "/environ"}},
		escProbe{name: "sibling-mem", op: "open", args: []string{"/proc/" + sib + "/mem"}},
	)
	// The controls: the same operations on the target itself succeed.
	controls := []escProbe{
		{name: "self-kill0", op: "kill", args: []string{"self", "0"}},
		{name: "self-cont", op: "kill", args: []string{"self", strconv.Itoa(int(syscall.SIGCONT))}},
		{name: "self-environ", op: "read", args: []string{"/proc/self/environ"}},
		{name: "self-mem", op: "open", args: []string{"/proc/self/mem"}},
	}
	args := []string{helper}
	for _, p := range append(probes, controls...) {
		args = append(args, p.arg())
	}
	out, err := m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: args})
	if err != nil || out.Status != ipc.StatusOK {
		t.Fatalf("attack program: %+v %v", out, err)
	}
	res := parseEscResults(out.Stdout)
	t.Logf("attack program:\n%s", out.Stdout)
	for _, p := range probes {
		if r, ok := res[p.name]; !ok {
			t.Errorf("%s: no result\n%s", p.name, out.Stdout)
		} else if r.ok {
			t.Errorf("attack %s succeeded: %s", p.name, r.text)
		}
	}
	for _, p := range controls {
		if r, ok := res[p.name]; !ok || !r.ok {
			t.Errorf("control %s failed: %s", p.name, r.text)
		}
	}
	if !alive(sibling) || !alive(st.Broker.PID) || !alive(st.Verifier.PID) {
		t.Errorf("a process was killed by the attack")
	}
	_ = syscall.Kill(sibling, syscall.SIGKILL)
	<-done

	// A setuid file of the call's uid would run as that uid for anyone,
	// later, outside the sandbox. The plain chmod is the control.
	out, err = m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sh", "-c", `
		f="$TMPDIR/setid-probe"
		: > "$f" || exit 1
		chmod 0750 "$f" && echo "plain-chmod: ok"
		chmod u+s "$f" && echo "setuid-chmod: ok"
		chmod g+s "$f" && echo "setgid-chmod: ok"
		echo "mode: $(stat -c %a "$f")"`}})
	if err != nil || out.Status != ipc.StatusOK {
		t.Fatalf("chmod program: %+v %v", out, err)
	}
	got := string(out.Stdout) + string(out.Stderr)
	t.Logf("chmod program:\n%s", got)
	if !strings.Contains(got, "plain-chmod: ok") {
		t.Errorf("control: a plain chmod of the target's own file failed:\n%s", got)
	}
	for _, attack := range []string{"setuid-chmod: ok", "setgid-chmod: ok"} {
		if strings.Contains(got, attack) {
			t.Errorf("the target made its file setuid or setgid (%q):\n%s", attack, got)
		}
	}
	if !strings.Contains(got, "mode: 750\n") {
		t.Errorf("the file's mode changed beyond the plain chmod:\n%s", got)
	}
	if n := strings.Count(got, "Operation not permitted"); n != 2 {
		t.Errorf("%d chmods refused with EPERM, want 2:\n%s", n, got)
	}
}

// TestMultiUIDRoleConfinement attacks from inside the roles, through the
// test hooks: the broker cannot write (or list) the verifier's state, even
// before it confines itself (by its uid alone), nor
// the verifier the broker's, and the verifier cannot connect anywhere, not even to a socket anyone may
// use; killed, each role is restarted with its state, and calls work again.
func TestMultiUIDRoleConfinement(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("multi-uid mode needs root")
	}
	probeDir, err := os.MkdirTemp("", "stk-probe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(probeDir) })
	if err := os.Chmod(probeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	unixPath := filepath.Join(probeDir, "open.sock")
	uln, err := net.Listen("unix", unixPath)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	if err := os.Chmod(unixPath, 0o777); err != nil {
		t.Fatal(err)
	}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tln.Close()
	var accepted atomic.Int32
	for _, ln := range []net.Listener{uln, tln} {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
	}
	trigger := func(state, role, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(state, role, "testhook"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := startMultiUID(t, "", 2, func(state string) {
		trigger(state, "broker", "on")
		trigger(state, "verifier", "unix "+unixPath)
	})
	waitLogged := func(substr string) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(m.logs.String(), substr) {
				return
			}
		}
		t.Fatalf("not logged: %q", substr)
	}
	waitLogged("stockade-testhook broker write-own-state: ok")
	// The first attempt, from the hook's init, is made before the broker
	// confines itself: its uid and the directory's owner and mode (0700)
	// alone must keep it out.
	for _, l := range []string{"write-verifier-state-unconfined: denied", "write-verifier-state: denied", "list-verifier-state: denied"} {
		if !strings.Contains(m.logs.String(), "stockade-testhook broker "+l) {
			t.Errorf("the broker's attack was not denied: want %q in\n%s", l, grepLines(m.logs.String(), "stockade-testhook"))
		}
	}
	for _, f := range []string{"broker-was-here", "broker-was-here-unconfined"} {
		if _, err := os.Stat(filepath.Join(m.state, "verifier", f)); err == nil {
			t.Errorf("the broker wrote %s into the verifier's state", f)
		}
	}

	// The verifier's attempt kills it (seccomp); it is restarted.
	waitLogged("stockade-testhook verifier attempt unix")
	for _, l := range []string{"list-broker-state: denied", "write-broker-state: denied"} {
		if !strings.Contains(m.logs.String(), "stockade-testhook verifier "+l) {
			t.Errorf("the verifier's attack was not denied: want %q in\n%s", l, grepLines(m.logs.String(), "stockade-testhook"))
		}
	}
	waitStarts := func(role string, n int) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if strings.Count(m.logs.String(), `msg="`+role+` started"`) >= n {
				m.waitReady()
				return
			}
		}
		t.Fatalf("the %s was not restarted", role)
	}
	waitStarts("verifier", 2)
	trigger(m.state, "verifier", "tcp "+tln.Addr().String())
	if pid := m.status().Verifier.PID; pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	} else {
		t.Fatal("no verifier pid")
	}
	waitStarts("verifier", 3)
	waitLogged("stockade-testhook verifier attempt tcp")
	waitStarts("verifier", 4)
	if strings.Contains(m.logs.String(), "stockade-testhook verifier survived") {
		t.Errorf("the verifier survived a connect attempt:\n%s", grepLines(m.logs.String(), "stockade-testhook"))
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the verifier connected out %d times", n)
	}
	if !strings.Contains(m.logs.String(), "bad system call") {
		t.Errorf("the verifier did not die of SIGSYS:\n%s", grepLines(m.logs.String(), "verifier"))
	}

	// Kill the broker: restarted with its state (the same attestation key).
	before := m.status()
	if before.Broker.PID <= 0 {
		t.Fatal("no broker pid")
	}
	_ = syscall.Kill(before.Broker.PID, syscall.SIGKILL)
	waitStarts("broker", 2)
	after := m.status()
	if after.AttestationKey != before.AttestationKey || after.AttestationKey == "" {
		t.Errorf("the broker's attestation key changed across a restart: %q → %q", before.AttestationKey, after.AttestationKey)
	}
	out, err := m.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "again"}})
	if err != nil || string(out.Stdout) != "again\n" {
		t.Fatalf("call after restarts: %+v %v", out, err)
	}
}

// zombieChildren lists the zombie children of parent whose real uid is uid.
func zombieChildren(parent int, uid uint32) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		st := map[string]string{}
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				st[k] = strings.TrimSpace(v)
			}
		}
		uids := strings.Fields(st["Uid"])
		if strings.HasPrefix(st["State"], "Z") && st["PPid"] == strconv.Itoa(parent) &&
			len(uids) > 0 && uids[0] == strconv.FormatUint(uint64(uid), 10) {
			out = append(out, pid)
		}
	}
	return out
}

func grepLines(s, substr string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, substr) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestMultiUIDReuse: with one executor uid, a call whose executor is killed
// leaves a daemon behind; the uid is handed out again only once that
// daemon is dead and the call's files are gone. With the uid busy, a call
// waits until its deadline and fails sandbox_unavailable, never sharing it.
func TestMultiUIDReuse(t *testing.T) {
	m := startMultiUID(t, "[run]\nallow_interpreters = true\ntier = \"B\"\n", 1, nil)
	daemon, main := newMarker(), newMarker()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sh", "-c",
			fmt.Sprintf("echo left > \"$TMPDIR/f\"; setsid sleep %d & exec sleep %d", daemon, main)}})
	}()
	target := waitTarget(t, main)
	waitTarget(t, daemon)
	uid := uidOf(t, target)

	// The only uid is busy: a call with a short deadline is refused.
	_, err := m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 700, Args: []string{"/usr/bin/id", "-u"}})
	wantClass(t, err, ipc.ClassSandboxUnavailable)

	exe := m.executorOf(target)
	if exe == 0 {
		t.Fatal("no executor")
	}
	_ = syscall.Kill(exe, syscall.SIGKILL)
	<-done
	out, err := m.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sh", "-c",
		fmt.Sprintf("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^sleep %d' && echo ALIVE; done; id -u", daemon)}})
	if err != nil || out.Status != ipc.StatusOK {
		t.Fatalf("second call: %+v %v", out, err)
	}
	if strings.Contains(string(out.Stdout), "ALIVE") {
		t.Errorf("the uid was reused while the first call's daemon lived: %q", out.Stdout)
	}
	if got := strings.TrimSpace(string(out.Stdout)); got != strconv.FormatUint(uint64(uid), 10) {
		t.Errorf("second call ran as %q, want the same single uid %d", got, uid)
	}
	if left := survivors(daemon); len(left) > 0 {
		t.Errorf("the daemon survives: %v", left)
	}
	// The first call's processes, orphaned to the supervisor and killed
	// with their uid, are reaped then, not at shutdown. (An executor of the
	// second call may be a zombie for a moment, until the supervisor waits
	// for it.)
	var zombies []int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if zombies = zombieChildren(m.cmd.Process.Pid, uid); len(zombies) == 0 {
			break
		}
	}
	if len(zombies) > 0 {
		t.Errorf("zombie children of the supervisor with uid %d remain: %v", uid, zombies)
	}
	// The executor removes its call's directory once it has answered.
	var ents []os.DirEntry
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if ents, _ = os.ReadDir(filepath.Join(m.state, "scratch")); len(ents) == 0 {
			break
		}
	}
	if len(ents) != 0 {
		t.Errorf("the scratch root holds %d entries after the calls", len(ents))
	}
}
