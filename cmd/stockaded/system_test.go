package main

// Integration tests: they build the five real binaries, start stockaded in
// single-user mode with temporary directories and talk to it as an agent
// would. Run them with `go test ./cmd/stockaded`.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "stockade-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		// Roles in multi-uid mode run the binaries under other uids.
		if err := os.Chmod(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// The test hooks (testhook.go files) attack from inside the roles
		// when a test asks them to; they exist only in these binaries.
		build := exec.Command("go", "build", "-tags", "stockade_testhook", "-o", dir, "github.com/stockade-dev/stockade/cmd/...")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the binaries:", err)
			return 1
		}
		binDir = dir
		return m.Run()
	}())
}

// syncBuffer collects a process's logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type system struct {
	t       testing.TB
	cmd     *exec.Cmd
	runtime string
	state   string
	socket  string
	logs    *syncBuffer
	done    chan struct{}
}

// testConfig is the embedded default's tools, with shells allowed for
// process.run (the tests drive their targets with sh -c).
const testConfig = "[run]\nallow_interpreters = true\n" + toolsConfig

// permissivePolicy lets the local user make any call: the tests drive their
// targets with shells, which the embedded default policy forbids.
var permissivePolicy = func() string {
	p, err := filepath.Abs("../../testdata/policy/permissive")
	if err != nil {
		panic(err)
	}
	return p
}()

// toolsConfig is the embedded default's tools.
const toolsConfig = `
[[tool]]
name = "echo"
kind = "process"
command = "/bin/echo"
allow_args = true

[[tool]]
name = "date"
kind = "process"
command = "/bin/date"
args = ["-u"]
`

// startSystem starts stockaded with config (TOML; empty: the embedded default)
// and waits until the broker answers.
func startSystem(t testing.TB, config string) *system {
	t.Helper()
	runtime, err := os.MkdirTemp("", "stk-rt")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	t.Cleanup(func() { os.RemoveAll(runtime) })
	args := []string{"--single-user", "--runtime-dir", runtime, "--state-dir", state}
	if config != "" {
		if !strings.Contains(config, "policy_dir") {
			config = fmt.Sprintf("policy_dir = %q\n", permissivePolicy) + config
		}
		p := filepath.Join(state, "stockade.toml")
		if err := os.WriteFile(p, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", p)
	}
	s := &system{t: t, runtime: runtime, state: state, socket: filepath.Join(runtime, ipc.AgentSocketName), logs: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(filepath.Join(binDir, "stockaded"), args...)
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
	return s
}

func (s *system) waitReady() {
	s.t.Helper()
	end := time.Now().Add(15 * time.Second)
	for time.Now().Before(end) {
		c, err := client.Dial(s.socket, 0)
		if err == nil {
			st, err := c.Status()
			c.Close()
			if err == nil && st.Verifier.Software == "stockade-verifier" {
				return
			}
		} else if errors.Is(err, ipc.ErrDenied) {
			return // up, and not for us: the test wants that
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("stockaded did not become ready; logs:\n%s", s.logs.String())
}

func (s *system) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		s.t.Error("stockaded did not stop on SIGTERM")
	}
}

func (s *system) dial() *client.Client {
	s.t.Helper()
	c, err := client.Dial(s.socket, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

func (s *system) call(req *ipc.CallRequest) (*ipc.Outcome, error) {
	c, err := client.Dial(s.socket, 0)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Call(req)
}

func (s *system) status() *ipc.BrokerStatus {
	s.t.Helper()
	st, err := s.dial().Status()
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// cli runs the stockade CLI against the system.
func (s *system) cli(args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "stockade"), args...)
	cmd.Env = append(os.Environ(), "STOCKADE_SOCKET="+s.socket)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		s.t.Fatal(err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || b[i+2] != 'Z'
}

func waitFile(t testing.TB, path string) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func wantClass(t testing.TB, err error, c ipc.ErrorClass) {
	t.Helper()
	var e *ipc.Error
	if !errors.As(err, &e) || e.Class != c {
		t.Fatalf("got %v, want class %s", err, c)
	}
}

// treeScript starts a double-forked grandchild in a session of its own and
// then sleeps itself; both sleeps carry the marker, so that survivors can find
// them from outside any pid namespace. It writes "ready" once both run.
func treeScript(marker int) string {
	return fmt.Sprintf(`setsid sh -c 'exec sleep %d' </dev/null >/dev/null 2>&1 & sleep 0.3; echo up > ready; exec sleep %d`, marker, marker)
}

var markerSeq atomic.Int64

// newMarker returns a sleep duration no other process on the host uses.
func newMarker() int {
	return 7_000_000 + int(time.Now().UnixNano()%1_000_000)*10 + int(markerSeq.Add(1)%10)
}

// survivors lists the host pids of live processes running `sleep <marker>`.
func survivors(marker int) []int {
	want := fmt.Sprintf("sleep\x00%d\x00", marker)
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasSuffix(string(b), want) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isolationModes are the ways a native call can be confined here; the
// lifetime tests run in each.
var isolationModes = []struct{ name, config string }{
	{"tier B", "[run]\nallow_interpreters = true\ntier = \"B\"\n"},
	{"tier C landlock", "[run]\nallow_interpreters = true\ntier = \"C\"\nbwrap = \"off\"\n"},
	{"tier C bwrap", "[run]\nallow_interpreters = true\ntier = \"C\"\nbwrap = \"required\"\n"},
}

func execCommand(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

// waitLog reports whether the system's logs contain substr within a few
// seconds (roles log after they answer).
func (s *system) waitLog(substr string) bool {
	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		if strings.Contains(s.logs.String(), substr) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func errorsAs(err error, target **ipc.Error) bool { return errors.As(err, target) }

// rawHello connects to agent.sock and completes Hello by hand.
func rawHello(t *testing.T, s *system) net.Conn {
	t.Helper()
	nc, err := net.Dial("unix", s.socket)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ipc.EncodeEnvelope(0, ipc.KindHello, ipc.Hello{Proto: ipc.ProtocolName, Version: ipc.ProtocolVersion, Channel: ipc.ChannelAgent})
	if _, err := nc.Write(ipc.AppendFrame(nil, b)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := ipc.ReadFrame(nc, ipc.ControlFrameMax); err != nil {
		t.Fatal(err)
	}
	return nc
}
