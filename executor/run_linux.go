package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// Stage2Arg is argv[1] of the second stage.
const Stage2Arg = "stage2"

// run starts the target through stage 2 and watches it to the end.
func run(ctx context.Context, log *slog.Logger, spec *ipc.ExecSpec) (*ipc.Outcome, error) {
	// Orphans of the call are reparented to this process, so that nothing the
	// target forks can outlive the call by double-forking.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot become a child subreaper")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "stage"), os.NewFile(uintptr(pair[1]), "stage2")
	defer mine.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		theirs.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		theirs.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		theirs.Close()
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{"stockade-exec", Stage2Arg},
		Env:        []string{},
		Dir:        spec.Dir,
		Stdin:      devnull,
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: []*os.File{theirs},
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:    true, // own session and process group: pgid == pid
			Pdeathsig: syscall.SIGKILL,
		},
	}
	start := time.Now()
	err = cmd.Start()
	theirs.Close()
	outW.Close()
	errW.Close()
	devnull.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot start the sandbox stage")
	}
	pid := cmd.Process.Pid
	tree := &processTree{pgid: pid, log: log}

	var quotaHit bool
	capt := newCapture(spec.MaxOutput, func() { quotaHit = true; tree.kill() })
	capt.drain(outR, false)
	capt.drain(errR, true)

	if err := handOver(mine, spec); err != nil {
		tree.kill()
		_, _ = cmd.Process.Wait()
		tree.reap()
		capt.result()
		return nil, err
	}

	waited := make(chan *os.ProcessState, 1)
	go func() {
		st, _ := cmd.Process.Wait()
		waited <- st
	}()
	timer := time.NewTimer(deadline(spec))
	defer timer.Stop()
	var timedOut bool
	var st *os.ProcessState
	select {
	case st = <-waited:
	case <-timer.C:
		timedOut = true
		tree.kill()
		st = <-waited
	case <-ctx.Done():
		tree.kill()
		<-waited
		tree.reap()
		capt.result()
		return nil, ipc.Errorf(ipc.ClassInternal, "call abandoned by the broker")
	}
	ran := time.Since(start)
	// The target is gone; so must be everything it started. reap kills only
	// if some process of the call remains: with no child left, no descendant
	// is left either (orphans are reparented to us).
	tree.reap()
	stdout, stderr, _ := capt.result()

	out := &ipc.Outcome{
		Stdout: stdout, Stderr: stderr, Truncated: quotaHit,
		Durations: ipc.Durations{Run: ran.Microseconds()},
		Enforced:  []string{"rlimits", "no_new_privs", "own_session", "subreaper", "cleared_env"},
	}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		out.Usage = ipc.Usage{
			UserMicros:   ru.Utime.Sec*1e6 + ru.Utime.Usec,
			SystemMicros: ru.Stime.Sec*1e6 + ru.Stime.Usec,
			MaxRSSKiB:    ru.Maxrss,
		}
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited():
		out.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		out.ExitCode = 128 + int(ws.Signal())
		out.Signal = unix.SignalName(ws.Signal())
	}
	switch {
	case quotaHit:
		out.Status = ipc.StatusQuotaExceeded
	case timedOut:
		out.Status = ipc.StatusTimedOut
	case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU ||
		ws.Signal() == syscall.SIGKILL && uint64(out.Usage.UserMicros+out.Usage.SystemMicros) >= spec.Limits.CPUSeconds*1e6):
		out.Status = ipc.StatusQuotaExceeded
	case ws.Signaled():
		out.Status = ipc.StatusSignaled
	case out.ExitCode == 0:
		out.Status = ipc.StatusOK
	default:
		out.Status = ipc.StatusExited
	}
	return out, nil
}

// handOver sends the spec to stage 2 and waits for its verdict: the socket
// closing without a word means the target was exec'd (the socket is
// close-on-exec); an error frame means stage 2 could not run it.
func handOver(f *os.File, spec *ipc.ExecSpec) error {
	b, err := ipc.EncodeEnvelope(0, ipc.KindExec, spec)
	if err != nil {
		return err
	}
	if err := ipc.WriteFrame(f, b, ipc.ControlFrameMax); err != nil {
		return ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage did not take the spec")
	}
	_ = f.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := ipc.ReadFrame(f, ipc.ControlFrameMax)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage did not answer")
		}
		return nil // EOF: exec'd
	}
	m, err := ipc.DecodeEnvelope(body)
	if err != nil || m.Kind != ipc.KindError {
		return ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage sent garbage")
	}
	return m.Err()
}
