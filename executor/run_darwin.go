package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// run starts the target through stage 2 and watches it to the end. On macOS,
// Tier C runs stage 2 (and so the target) under /usr/bin/sandbox-exec with
// the generated Seatbelt profile; Tier B runs stage 2 directly. Stage 2 sets
// the rlimits and execs the target.
//
// macOS has no child subreaper, cgroups or pid namespaces: the call is ended
// by killing its process group, and a descendant that left the group
// (setsid) is beyond it. The receipt says which layers were applied.
//
// This runner cannot be exercised on the Linux hosts the project's CI runs
// on: it is compiled for darwin there, and the Seatbelt profile it uses is
// checked against golden files.
func run(ctx context.Context, log *slog.Logger, spec *ipc.ExecSpec) (*ipc.Outcome, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	receipt := ipc.Receipt{
		Tier: spec.Tier, Backend: "native", Namespaces: []string{},
		Layers: []string{"rlimits", "cleared_env", "own_session", "closed_fds"},
	}
	cmd := &exec.Cmd{Path: self, Args: []string{"stockade-exec", Stage2Arg}, Env: []string{}, Dir: spec.Dir}
	if spec.Sandbox != nil {
		profile, err := seatbeltProfile(spec.Sandbox, spec.Egress)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(sandboxExecPath); err != nil {
			return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "%s is not available", sandboxExecPath)
		}
		cmd.Path = sandboxExecPath
		cmd.Args = []string{"sandbox-exec", "-p", profile, self, Stage2Arg}
		receipt.Backend = "seatbelt"
		receipt.Layers = append(receipt.Layers, "seatbelt")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "stage"), os.NewFile(uintptr(fds[1]), "stage2")
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
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, outW, errW
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	artifact := artifactDigest(spec.Path)
	start := time.Now()
	err = cmd.Start()
	for _, f := range []*os.File{theirs, outW, errW, devnull} {
		f.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot start the sandbox stage")
	}
	pgid := cmd.Process.Pid
	kill := func() { _ = unix.Kill(-pgid, unix.SIGKILL) }
	var quotaHit bool
	capt := newCapture(spec.MaxOutput, func() { quotaHit = true; kill() })
	capt.drain(outR, false)
	capt.drain(errR, true)
	if _, err := handOver(mine, &stagePlan{Spec: *spec}); err != nil {
		kill()
		_, _ = cmd.Process.Wait()
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
		kill()
		st = <-waited
	case <-ctx.Done():
		kill()
		<-waited
		capt.result()
		return nil, ipc.Errorf(ipc.ClassInternal, "call abandoned by the broker")
	}
	ran := time.Since(start)
	kill() // what is left of the process group
	stdout, stderr, _ := capt.result()
	out := &ipc.Outcome{
		Stdout: stdout, Stderr: stderr, Truncated: quotaHit,
		Durations: ipc.Durations{Run: ran.Microseconds()},
		Sandbox:   receipt,
		Artifact:  artifact,
	}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		out.Usage = ipc.Usage{
			UserMicros:   ru.Utime.Sec*1e6 + int64(ru.Utime.Usec),
			SystemMicros: ru.Stime.Sec*1e6 + int64(ru.Stime.Usec),
			MaxRSSKiB:    ru.Maxrss / 1024, // bytes on macOS
		}
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	classify(out, ws, spec, false, quotaHit, timedOut)
	log.Debug("call ran", "status", out.Status)
	return out, nil
}
