package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
)

func TestCallEndToEnd(t *testing.T) {
	for _, m := range isolationModes {
		t.Run(m.name, func(t *testing.T) {
			s := startSystem(t, m.config+toolsConfig)
			out, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != ipc.StatusOK || string(out.Stdout) != "hi\n" || out.ExitCode != 0 || out.CallID == "" {
				t.Fatalf("outcome %+v", out)
			}
			checkReceipt(t, m.name, out)
			out, err = s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"false"}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != ipc.StatusExited || out.ExitCode != 1 {
				t.Fatalf("false: %+v", out)
			}
			// A configured tool with its fixed arguments and the agent's.
			out, err = s.call(&ipc.CallRequest{Tool: "echo", Args: []string{"a", "b"}})
			if err != nil || string(out.Stdout) != "a b\n" {
				t.Fatalf("echo tool: %+v %v", out, err)
			}
			// The target sees a cleared environment, the workspace as cwd, no
			// descriptor above 2 (fd 3 below is ls's own directory handle) and
			// its limits.
			ws := t.TempDir()
			out, err = s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c",
				`env | sort; pwd; ls /proc/self/fd | tr '\n' ' '; echo; ulimit -n; ulimit -c; grep -E 'NoNewPrivs|CapPrm|CapEff|CapAmb' /proc/self/status`}})
			if err != nil {
				t.Fatal(err)
			}
			var env []string
			for _, l := range strings.Split(strings.TrimSpace(string(out.Stdout)), "\n") {
				if strings.Contains(l, "=") {
					env = append(env, strings.SplitN(l, "=", 2)[0])
				}
			}
			for _, name := range env {
				if !slices.Contains([]string{"HOME", "LANG", "LC_ALL", "PATH", "PWD", "TMPDIR", "SHLVL", "_", "OLDPWD"}, name) {
					t.Errorf("unexpected variable %s in the target's environment", name)
				}
			}
			text := string(out.Stdout)
			for _, want := range []string{"\n" + ws + "\n", "0 1 2 3 \n", "\n256\n", "\n0\n", "NoNewPrivs:\t1",
				"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapAmb:\t0000000000000000"} {
				if !strings.Contains(text, want) {
					t.Errorf("target output lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

// checkReceipt checks that the outcome says what the mode enforces.
func checkReceipt(t *testing.T, mode string, out *ipc.Outcome) {
	t.Helper()
	r := out.Sandbox
	wantSeccomp := "executor-nonet"
	if mode == "tier C landlock" {
		wantSeccomp = "executor-sealed-nonet" // no namespaces: no socket(AF_UNIX), no SysV IPC
	}
	if r.Seccomp != wantSeccomp || !strings.HasPrefix(r.SeccompDigest, "sha256:") {
		t.Errorf("%s: seccomp %q %q", mode, r.Seccomp, r.SeccompDigest)
	}
	switch mode {
	case "tier B":
		if out.Tier != "B" || r.Backend != "native" || r.LandlockABI != 0 || slices.Contains(r.Layers, "landlock") {
			t.Errorf("tier B receipt %+v", r)
		}
	case "tier C landlock":
		if out.Tier != "C" || r.Backend != "native" || r.LandlockABI < 6 || len(r.Namespaces) != 0 {
			t.Errorf("tier C landlock receipt %+v", r)
		}
	case "tier C bwrap":
		if out.Tier != "C" || r.Backend != "bwrap" || r.LandlockABI < 6 || !slices.Contains(r.Namespaces, "net") || r.BwrapVersion == "" {
			t.Errorf("tier C bwrap receipt %+v", r)
		}
	}
}

func TestCLI(t *testing.T) {
	s := startSystem(t, testConfig)
	if o, e, code := s.cli("run", "--", "/bin/echo", "hi"); o != "hi\n" || code != 0 {
		t.Fatalf("echo: %q %q %d", o, e, code)
	}
	if _, _, code := s.cli("run", "--", "/bin/false"); code != 1 {
		t.Fatalf("false exited %d", code)
	}
	if _, e, code := s.cli("call", "nope"); code != exitInvalidInput || !strings.Contains(e, "invalid_input") {
		t.Fatalf("unknown tool: %q %d", e, code)
	}
	if _, e, code := s.cli("run", "--", "no-such-command-here"); code != 127 || !strings.Contains(e, "failed: command not found") {
		t.Fatalf("missing command: %q %d", e, code)
	}
	o, _, code := s.cli("run", "--json", "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 3")
	var got map[string]any
	if err := json.Unmarshal([]byte(o), &got); err != nil || code != 3 {
		t.Fatalf("json: %v %d %q", err, code, o)
	}
	if got["status"] != "exited" || got["stdout"] != "out\n" || got["stderr"] != "err\n" || got["exit_code"] != 3.0 || got["tier"] != "C" {
		t.Fatalf("json outcome %v", got)
	}
	for _, k := range []string{"usage", "durations", "truncated", "signal", "call_id", "sandbox"} {
		if _, ok := got[k]; !ok && k != "signal" {
			t.Errorf("json outcome lacks %s", k)
		}
	}
	if o, _, code := s.cli("tools"); code != 0 || !strings.Contains(o, "process.run") || !strings.Contains(o, "echo") {
		t.Fatalf("tools: %q", o)
	}
	if o, _, code := s.cli("call", "echo", "--", "x"); code != 0 || o != "x\n" {
		t.Fatalf("call echo: %q %d", o, code)
	}
}

const exitInvalidInput = 64

func TestTypedErrors(t *testing.T) {
	s := startSystem(t, testConfig)
	_, err := s.call(&ipc.CallRequest{Tool: "nope"})
	wantClass(t, err, ipc.ClassInvalidInput)
	_, err = s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/no/such/program"}})
	wantClass(t, err, ipc.ClassFailed)
	_, err = s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"bin/echo"}})
	wantClass(t, err, ipc.ClassInvalidInput)
	_, err = s.call(&ipc.CallRequest{Tool: "date", Args: []string{"x"}})
	wantClass(t, err, ipc.ClassInvalidInput)
	_, err = s.call(&ipc.CallRequest{Tool: "process.run", Workspace: "/no/such/dir", Args: []string{"true"}})
	wantClass(t, err, ipc.ClassInvalidInput)
	_, err = s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"echo", "a\x00b"}})
	wantClass(t, err, ipc.ClassInvalidInput)
}

// TestRefusedPeer: a broker configured for another uid refuses us, by the
// uid the kernel reports, before reading a byte.
func TestRefusedPeer(t *testing.T) {
	s := startSystem(t, "agent_uids = [4242424]\n")
	_, err := client.Dial(s.socket, 0)
	wantClass(t, err, ipc.ClassDenied)
	if !s.waitLog("refused agent: uid not allowed") {
		t.Error("refusal not logged")
	}
	// The admin socket is for admins; the broker's agent list does not matter.
	o, e, code := runCLI(t, "stockade-verifier", "--socket", filepath.Join(s.runtime, ipc.AdminSocketName), "--json", "status")
	if code != 0 || !strings.Contains(o, `"verifier"`) {
		t.Fatalf("admin status: %q %q %d", o, e, code)
	}
}

func runCLI(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := execCommand(filepath.Join(binDir, bin), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	_ = cmd.Run()
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

func TestOutputQuota(t *testing.T) {
	s := startSystem(t, testConfig)
	out, err := s.call(&ipc.CallRequest{Tool: "process.run", MaxOutput: 1000, Args: []string{"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ipc.StatusQuotaExceeded || !out.Truncated || len(out.Stdout)+len(out.Stderr) != 1000 {
		t.Fatalf("status %s truncated %v, %d bytes", out.Status, out.Truncated, len(out.Stdout)+len(out.Stderr))
	}
	if !strings.HasPrefix(string(out.Stdout), "y\ny\n") {
		t.Fatalf("stdout %q", out.Stdout[:10])
	}
	// Both streams count against one quota.
	out, err = s.call(&ipc.CallRequest{Tool: "process.run", MaxOutput: 100, Args: []string{"/bin/sh", "-c", "head -c 60 /dev/zero; head -c 60 /dev/zero >&2; sleep 5"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ipc.StatusQuotaExceeded || len(out.Stdout)+len(out.Stderr) != 100 {
		t.Fatalf("combined: %s %d+%d", out.Status, len(out.Stdout), len(out.Stderr))
	}
	// Under the quota nothing is flagged.
	out, err = s.call(&ipc.CallRequest{Tool: "process.run", MaxOutput: 100, Args: []string{"/bin/sh", "-c", "head -c 100 /dev/zero"}})
	if err != nil || out.Status != ipc.StatusOK || out.Truncated || len(out.Stdout) != 100 {
		t.Fatalf("exactly the quota: %+v %v", out, err)
	}
}

func TestTimeoutKillsTree(t *testing.T) {
	for _, m := range isolationModes {
		t.Run(m.name, func(t *testing.T) {
			s := startSystem(t, m.config+toolsConfig)
			ws := t.TempDir()
			marker := newMarker()
			start := time.Now()
			out, err := s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, TimeoutMS: 4000, Args: []string{"/bin/sh", "-c", treeScript(marker)}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != ipc.StatusTimedOut {
				t.Fatalf("status %s", out.Status)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v", d)
			}
			if _, err := os.Stat(filepath.Join(ws, "ready")); err != nil {
				t.Fatal("the grandchild never started: the test proves nothing")
			}
			if pids := survivors(marker); len(pids) > 0 {
				t.Fatalf("processes of the call survived: %v", pids)
			}
		})
	}
}

// TestNoOrphanAfterExit: a target that exits at once, leaving a double-forked
// grandchild, leaves nothing behind either.
func TestNoOrphanAfterExit(t *testing.T) {
	for _, m := range isolationModes {
		t.Run(m.name, func(t *testing.T) {
			s := startSystem(t, m.config+toolsConfig)
			ws := t.TempDir()
			marker := newMarker()
			script := fmt.Sprintf(`setsid sh -c 'echo up > ready; exec sleep %d' </dev/null >/dev/null 2>&1 & while ! [ -s ready ]; do sleep 0.01; done`, marker)
			out, err := s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c", script}})
			if err != nil || out.Status != ipc.StatusOK {
				t.Fatalf("%+v %v", out, err)
			}
			if pids := survivors(marker); len(pids) > 0 {
				t.Fatalf("grandchild survived: %v", pids)
			}
		})
	}
}

func TestOnlyTwoSockets(t *testing.T) {
	s := startSystem(t, testConfig)
	// Make one call so executors have come and gone.
	if _, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	var sockets []string
	err := filepath.WalkDir(s.runtime, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSocket != 0 {
			sockets = append(sockets, d.Name())
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v", p, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(sockets)
	if !slices.Equal(sockets, []string{ipc.AdminSocketName, ipc.AgentSocketName}) {
		t.Fatalf("sockets in the runtime dir: %v", sockets)
	}
	if fi, err := os.Stat(s.runtime); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("runtime dir mode: %v %v", fi.Mode(), err)
	}
	// A second supervisor on the same runtime dir is refused.
	cmd := execCommand(filepath.Join(binDir, "stockaded"), "--single-user", "--runtime-dir", s.runtime, "--state-dir", t.TempDir())
	o, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(o), "another stockaded") {
		t.Fatalf("second supervisor: %s", o)
	}
}

func TestRoleRestart(t *testing.T) {
	s := startSystem(t, testConfig)
	for _, role := range []string{"broker", "verifier"} {
		t.Run(role, func(t *testing.T) {
			before := s.status()
			pid := before.Broker.PID
			if role == "verifier" {
				pid = before.Verifier.PID
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			end := time.Now().Add(15 * time.Second)
			for {
				if time.Now().After(end) {
					t.Fatalf("%s not restarted", role)
				}
				time.Sleep(50 * time.Millisecond)
				c, err := client.Dial(s.socket, 0)
				if err != nil {
					continue
				}
				st, err := c.Status()
				c.Close()
				if err != nil {
					continue
				}
				now := st.Broker.PID
				if role == "verifier" {
					now = st.Verifier.PID
				}
				if now != 0 && now != pid && st.Verifier.Software == "stockade-verifier" {
					break
				}
			}
			out, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"echo", "again"}})
			if err != nil || string(out.Stdout) != "again\n" {
				t.Fatalf("call after restart: %+v %v", out, err)
			}
			if !s.waitLog("role exited; restarting") {
				t.Error("restart not logged")
			}
		})
	}
}

func TestShutdownLeavesNothing(t *testing.T) {
	for _, m := range isolationModes {
		t.Run(m.name, func(t *testing.T) {
			s := startSystem(t, m.config+toolsConfig)
			st := s.status()
			ws := t.TempDir()
			marker := newMarker()
			callDone := make(chan error, 1)
			go func() {
				_, err := s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c", treeScript(marker)}})
				callDone <- err
			}()
			waitFile(t, filepath.Join(ws, "ready"))
			// The script writes "ready" just before it execs its own sleep.
			for end := time.Now().Add(10 * time.Second); len(survivors(marker)) < 2 && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			if len(survivors(marker)) < 2 {
				t.Fatal("the call's processes are not running: the test proves nothing")
			}
			roles := map[string]int{"stockaded": s.cmd.Process.Pid, "broker": st.Broker.PID, "verifier": st.Verifier.PID}
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.done:
			case <-time.After(15 * time.Second):
				t.Fatal("stockaded did not exit on SIGTERM")
			}
			select {
			case err := <-callDone:
				if err == nil {
					t.Error("the call in flight reported success")
				}
			case <-time.After(5 * time.Second):
				t.Error("the client was not answered or disconnected")
			}
			for name, pid := range roles {
				if alive(pid) {
					t.Errorf("%s (pid %d) survived SIGTERM", name, pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if pids := survivors(marker); len(pids) > 0 {
				t.Errorf("processes of the call survived SIGTERM: %v", pids)
			}
			if _, err := os.Stat(s.socket); !os.IsNotExist(err) {
				t.Errorf("agent.sock left behind: %v", err)
			}
		})
	}
}

// TestProtocolAbuse speaks raw frames to agent.sock.
func TestProtocolAbuse(t *testing.T) {
	s := startSystem(t, testConfig)
	hello := func(v int, ch ipc.Channel) []byte {
		b, _ := ipc.EncodeEnvelope(0, ipc.KindHello, ipc.Hello{Proto: ipc.ProtocolName, Version: v, Channel: ch})
		return ipc.AppendFrame(nil, b)
	}
	good := hello(ipc.ProtocolVersion, ipc.ChannelAgent)
	execReq, _ := ipc.EncodeEnvelope(1, ipc.KindExec, ipc.ExecSpec{Path: "/bin/sh", Argv: []string{"sh"}})
	tests := []struct {
		name  string
		send  [][]byte
		class ipc.ErrorClass // of the last reply before the close
	}{
		{"version 2 hello", [][]byte{hello(2, ipc.ChannelAgent)}, ipc.ClassVersionMismatch},
		{"admin channel on agent.sock", [][]byte{hello(1, ipc.ChannelAdmin)}, ipc.ClassVersionMismatch},
		{"array32 bomb after hello", [][]byte{good, {0, 0, 0, 5, 0xdd, 0xff, 0xff, 0xff, 0xff}}, ipc.ClassProtocol},
		{"2 GiB frame after hello", [][]byte{good, {0x7f, 0xff, 0xff, 0xff}}, ipc.ClassProtocol},
		{"exec on the agent channel", [][]byte{good, ipc.AppendFrame(nil, execReq)}, ipc.ClassProtocol},
	}
	brokerPID := s.status().Broker.PID
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := net.Dial("unix", s.socket)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			for _, f := range tt.send {
				if _, err := nc.Write(f); err != nil {
					t.Fatal(err)
				}
			}
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			var last *ipc.Message
			for {
				b, err := ipc.ReadFrame(nc, ipc.ControlFrameMax)
				if err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatal("connection left open")
					}
					break // closed
				}
				if last, err = ipc.DecodeEnvelope(b); err != nil {
					t.Fatal(err)
				}
			}
			if last == nil || last.Kind != ipc.KindError || last.Err().Class != tt.class {
				t.Fatalf("last reply %+v", last)
			}
		})
	}
	if st := s.status(); st.Broker.PID != brokerPID {
		t.Fatal("the broker died of it")
	}
}

func TestConnectionCap(t *testing.T) {
	s := startSystem(t, "max_conns_per_uid = 2\n"+testConfig)
	// The broker frees a slot when it notices a close; wait for a free one.
	dialSoon := func() *client.Client {
		t.Helper()
		end := time.Now().Add(5 * time.Second)
		for {
			c, err := client.Dial(s.socket, 0)
			if err == nil {
				t.Cleanup(func() { c.Close() })
				return c
			}
			if time.Now().After(end) {
				t.Fatalf("no slot: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	a := dialSoon()
	dialSoon()
	_, err := client.Dial(s.socket, 0)
	wantClass(t, err, ipc.ClassQuotaExceeded)
	a.Close()
	dialSoon()
}

// TestCallCgroup: where the host lets the executor make cgroups (root on a
// host with v1 pids and memory hierarchies, like CI), each call runs in its
// own, with its limits, and the cgroup is gone afterwards.
func TestCallCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups on this host")
	}
	if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err != nil {
		t.Skip("no cgroup v1 pids hierarchy here")
	}
	for _, m := range isolationModes {
		t.Run(m.name, func(t *testing.T) {
			s := startSystem(t, m.config+"[run.limits]\npids = 64\nmemory = 67108864\n"+toolsConfig)
			out, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/sh", "-c", "cat /proc/self/cgroup"}})
			if err != nil {
				t.Fatal(err)
			}
			// Under bwrap the cgroup namespace shows the call's cgroup as "/".
			seen := m.name == "tier C bwrap" && strings.Contains(string(out.Stdout), ":pids:/\n") ||
				strings.Contains(string(out.Stdout), "stockade-"+out.CallID)
			if !strings.Contains(out.Sandbox.Cgroup, "stockade-"+out.CallID) || !seen {
				t.Fatalf("receipt %q, target in %s", out.Sandbox.Cgroup, out.Stdout)
			}
			// Where cgroup v2 is mounted (the unified part of this hybrid
			// host) the call gets a v2 cgroup too, for cgroup.kill.
			if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
				if !strings.Contains(out.Sandbox.Cgroup, "v2:unified/stockade-"+out.CallID) {
					t.Errorf("no v2 cgroup in the receipt %q", out.Sandbox.Cgroup)
				}
				if _, err := os.Stat("/sys/fs/cgroup/unified/stockade-" + out.CallID); !os.IsNotExist(err) {
					t.Errorf("v2 cgroup left behind: %v", err)
				}
			}
			if m.name != "tier C bwrap" { // bwrap's cgroup namespace hides the path
				if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/pids", "stockade-"+out.CallID)); !os.IsNotExist(err) {
					t.Errorf("cgroup left behind: %v", err)
				}
			}
			// A memory bomb is stopped by the memory limit and reported as a quota.
			out, err = s.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 20000, Args: []string{"/bin/sh", "-c",
				`x=a; while :; do x="$x$x"; done`}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != ipc.StatusQuotaExceeded {
				t.Fatalf("memory bomb: %s %s (exit %d)", out.Status, out.Signal, out.ExitCode)
			}
			// A fork bomb hits pids.max and ends with the call.
			marker := newMarker()
			out, err = s.call(&ipc.CallRequest{Tool: "process.run", TimeoutMS: 3000, Args: []string{"/bin/sh", "-c",
				fmt.Sprintf(`b() { sleep %d & b & }; b; wait`, marker)}})
			if err != nil {
				t.Fatal(err)
			}
			if pids := survivors(marker); len(pids) > 0 {
				t.Fatalf("fork bomb left %d processes", len(pids))
			}
		})
	}
}

// TestRolesRestricted: the broker and the verifier run under their seccomp
// allow-lists and no_new_privs once started.
func TestRolesRestricted(t *testing.T) {
	s := startSystem(t, testConfig)
	st := s.status()
	for name, pid := range map[string]int{"broker": st.Broker.PID, "verifier": st.Verifier.PID} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	if !s.waitLog("broker restricted") || !s.waitLog("verifier restricted") {
		t.Error("restriction not logged")
	}
}

// TestHardlinkedWorkspace: a hardlink planted in a writable workspace would
// let the target write a file outside it (Landlock confines paths, not
// inodes): Tier C refuses such a workspace.
func TestHardlinkedWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "target.txt")
	if err := os.WriteFile(outside, []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.Link(outside, filepath.Join(ws, "planted.txt")); err != nil {
		t.Fatal(err)
	}
	attack := &ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c", "echo PWNED >> planted.txt"}}
	s := startSystem(t, "[run]\nallow_interpreters = true\ntier = \"C\"\n"+toolsConfig)
	_, err := s.call(attack)
	wantClass(t, err, ipc.ClassInvalidInput)
	if b, _ := os.ReadFile(outside); string(b) != "orig\n" {
		t.Fatalf("outside file now %q", b)
	}
	// The same workspace without the link runs.
	if err := os.Remove(filepath.Join(ws, "planted.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c", "echo ok > mine.txt"}}); err != nil {
		t.Fatalf("clean workspace: %v", err)
	}
}

// TestWorkspaceCannotBeStockade: a workspace may not overlap Stockade's own
// directories (the state dir holds the attestation key and log), nor be /.
func TestWorkspaceCannotBeStockade(t *testing.T) {
	s := startSystem(t, testConfig)
	for _, ws := range []string{s.state, filepath.Dir(s.state), s.runtime, binDir, "/", "/etc"} {
		_, err := s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"true"}})
		if !errors.Is(err, ipc.ErrInvalidInput) {
			t.Errorf("workspace %s: %v", ws, err)
		}
	}
}
