package executor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// The test binary is its own second stage: run() re-executes os.Executable()
// with argv[1] == "stage2".
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == Stage2Arg {
		os.Exit(Stage2())
	}
	os.Exit(m.Run())
}

func spec(t *testing.T, argv ...string) *ipc.ExecSpec {
	t.Helper()
	return &ipc.ExecSpec{
		CallID: "test", Path: argv[0], Argv: argv, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: t.TempDir(), Tier: "B", TimeoutMS: 20000, MaxOutput: 1 << 20,
		Limits: ipc.Rlimits{CPUSeconds: 10, AddressSpace: 4 << 30, NoFile: 64, NProc: 4096, FileSize: 1 << 20},
	}
}

func runSpec(t *testing.T, s *ipc.ExecSpec) *ipc.Outcome {
	t.Helper()
	out, err := run(context.Background(), slog.New(slog.DiscardHandler), s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunStatuses(t *testing.T) {
	tests := []struct {
		name   string
		script string
		status ipc.Status
		code   int
		signal string
	}{
		{"ok", "exit 0", ipc.StatusOK, 0, ""},
		{"exit 7", "exit 7", ipc.StatusExited, 7, ""},
		{"signaled", "kill -TERM $$", ipc.StatusSignaled, 128 + 15, "SIGTERM"},
		// RLIMIT_FSIZE: head is killed by SIGXFSZ (25) past 1 MiB; sh exits 128+25.
		{"file size limit", "head -c 2000000 /dev/zero > big", ipc.StatusExited, 128 + 25, ""},
	}
	for _, tt := range tests {
		// Not parallel: run() kills every child of this process when a call
		// ends, as an executor (one call per process) must.
		t.Run(tt.name, func(t *testing.T) {
			s := spec(t, "/bin/sh", "-c", tt.script)
			out := runSpec(t, s)
			if out.Status != tt.status || out.ExitCode != tt.code || out.Signal != tt.signal {
				t.Fatalf("got %s %d %q, want %s %d %q", out.Status, out.ExitCode, out.Signal, tt.status, tt.code, tt.signal)
			}
			if tt.name == "file size limit" {
				fi, err := os.Stat(filepath.Join(s.Dir, "big"))
				if err != nil || fi.Size() > 1<<20 {
					t.Fatalf("file grew past RLIMIT_FSIZE: %v %v", fi.Size(), err)
				}
			}
		})
	}
}

// TestLimitsApplied reads the target's own view of its limits.
func TestLimitsApplied(t *testing.T) {
	out := runSpec(t, spec(t, "/bin/cat", "/proc/self/limits"))
	text := string(out.Stdout)
	for _, want := range []string{
		"Max cpu time              10                   11",
		"Max file size             1048576              1048576",
		"Max core file size        0                    0",
		"Max open files            64                   64",
		"Max address space         4294967296           4294967296",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("limits lack %q:\n%s", want, text)
		}
	}
}

func TestCPULimit(t *testing.T) {
	s := spec(t, "/bin/sh", "-c", "while :; do :; done")
	s.Limits.CPUSeconds = 1
	out := runSpec(t, s)
	if out.Status != ipc.StatusQuotaExceeded || out.Signal != "SIGXCPU" {
		t.Fatalf("got %s %q", out.Status, out.Signal)
	}
}

func TestExecFailure(t *testing.T) {
	s := spec(t, "/etc/hostname")
	_, err := run(context.Background(), slog.New(slog.DiscardHandler), s)
	if !errors.Is(err, ipc.ErrFailed) {
		t.Fatalf("got %v", err)
	}
}

func TestBrokerGoneKillsCall(t *testing.T) {
	s := spec(t, "/bin/sh", "-c", "echo $$ > pid; exec sleep 300")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, slog.New(slog.DiscardHandler), s)
		done <- err
	}()
	pidFile := filepath.Join(s.Dir, "pid")
	for i := 0; i < 500; i++ {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("abandoned call reported success")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call not ended")
	}
	b, _ := os.ReadFile(pidFile)
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(b))); err == nil {
		t.Fatal("target survived")
	}
}

func TestCheckSpec(t *testing.T) {
	base := func() *ipc.ExecSpec { return spec(t, "/bin/true") }
	for name, mutate := range map[string]func(*ipc.ExecSpec){
		"relative path":  func(s *ipc.ExecSpec) { s.Path = "true" },
		"unclean path":   func(s *ipc.ExecSpec) { s.Path = "/bin/../bin/true" },
		"empty argv":     func(s *ipc.ExecSpec) { s.Argv = nil },
		"relative dir":   func(s *ipc.ExecSpec) { s.Dir = "w" },
		"zero timeout":   func(s *ipc.ExecSpec) { s.TimeoutMS = 0 },
		"tier C":         func(s *ipc.ExecSpec) { s.Tier = "C" },
		"malformed env":  func(s *ipc.ExecSpec) { s.Env = []string{"NOEQUALS"} },
		"empty env name": func(s *ipc.ExecSpec) { s.Env = []string{"=x"} },
	} {
		s := base()
		mutate(s)
		if err := checkSpec(s); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if err := checkSpec(base()); err != nil {
		t.Fatal(err)
	}
}
