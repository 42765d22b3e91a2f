package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/seccomp"
)

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
	plan, receipt, prog, err := decide(spec)
	if err != nil {
		return nil, err
	}
	cg, err := makeCallCgroup(spec.CallID, spec.Limits.Pids, spec.Limits.Memory)
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot make the call's cgroup")
	}
	if cg != nil {
		receipt.Cgroup = cg.name
		receipt.Layers = append(receipt.Layers, "cgroup")
		defer func() {
			if left := cg.killAll(reapTimeout); len(left) > 0 {
				log.Error("processes of the call survive in its cgroup", "pids", left)
			}
			reapAll()
			cg.remove()
		}()
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "stage"), os.NewFile(uintptr(pair[1]), "stage2")
	defer mine.Close()
	var toClose []*os.File
	closeAll := func() {
		for _, f := range toClose {
			f.Close()
		}
		toClose = nil
	}
	defer closeAll()
	toClose = append(toClose, theirs)
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	toClose = append(toClose, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		return nil, err
	}
	toClose = append(toClose, errW)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	toClose = append(toClose, devnull)
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
	if receipt.Backend == "bwrap" {
		// bwrap installs the filter from fd 4 just before it execs stage 2.
		filter, err := filterPipe(prog)
		if err != nil {
			outR.Close()
			errR.Close()
			return nil, err
		}
		toClose = append(toClose, filter)
		cmd.Path = bwrapPath
		cmd.Args = append([]string{"bwrap"}, bwrapArgs(spec.Sandbox, spec.Egress, self, spec.Dir, 4)...)
		cmd.ExtraFiles = append(cmd.ExtraFiles, filter)
	}
	artifact := artifactDigest(spec.Path)
	start := time.Now()
	if cg != nil {
		// Stage 2 is born in the call's cgroup; this process leaves it as
		// soon as the fork is done, before stage 2 has its plan.
		if err := cg.enter(); err != nil {
			outR.Close()
			errR.Close()
			return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot enter the call's cgroup")
		}
	}
	err = cmd.Start()
	if cg != nil {
		cg.leave()
	}
	closeAll()
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

	rep, err := handOver(mine, plan)
	if err != nil {
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
	receipt.LandlockABI = rep.LandlockABI
	// The target is gone; so must be everything it started. reap kills only
	// if some process of the call remains: with no child left, no descendant
	// is left either (orphans are reparented to us).
	tree.reap()
	stdout, stderr, _ := capt.result()

	out := &ipc.Outcome{
		Stdout: stdout, Stderr: stderr, Truncated: quotaHit,
		Durations: ipc.Durations{Run: ran.Microseconds()},
		Sandbox:   receipt,
		Artifact:  artifact,
	}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		out.Usage = ipc.Usage{
			UserMicros:   ru.Utime.Sec*1e6 + ru.Utime.Usec,
			SystemMicros: ru.Stime.Sec*1e6 + ru.Stime.Usec,
			MaxRSSKiB:    ru.Maxrss,
		}
	}
	if u, sys, mem, ok := cg.usage(); ok {
		out.Usage.UserMicros, out.Usage.SystemMicros = u, sys
		if mem > 0 {
			out.Usage.MaxRSSKiB = mem
		}
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	classify(out, ws, spec, receipt.Backend == "bwrap", quotaHit || cg.oomKilled(), timedOut)
	return out, nil
}

// decide turns a spec into stage 2's plan and the receipt of what will be
// enforced, refusing (sandbox_unavailable) what this host cannot give: a
// Landlock ABI below the call's minimum, or bwrap required but unusable.
func decide(spec *ipc.ExecSpec) (*stagePlan, ipc.Receipt, *seccomp.Program, error) {
	r := ipc.Receipt{
		Tier: spec.Tier, Backend: "native", Seccomp: "executor", Namespaces: []string{},
		Layers: []string{"rlimits", "no_capabilities", "no_new_privs", "cleared_env", "own_session", "subreaper", "closed_fds"},
	}
	if !spec.Egress {
		r.Seccomp = "executor-nonet"
	}
	sb := spec.Sandbox
	if sb != nil && !sb.AllowHardlinks && slices.Contains(sb.ReadWrite, spec.Dir) {
		if err := checkHardlinks(spec.Dir); err != nil {
			return nil, r, nil, err
		}
	}
	if sb != nil {
		host := LandlockABI()
		if host == 0 || host < sb.MinLandlockABI {
			return nil, r, nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "Landlock ABI %d here, the call needs %d", host, max(sb.MinLandlockABI, 1))
		}
		if sb.Bwrap != "required" {
			// No namespaces: seal off the host's Unix sockets and SysV IPC.
			r.Seccomp = strings.Replace(r.Seccomp, "executor", "executor-sealed", 1)
		}
		if sb.Bwrap == "required" {
			// The broker probed bwrap; if it fails now, stage 2 never reports
			// and the call is refused, never run without it.
			r.Backend, r.BwrapVersion = "bwrap", sb.BwrapVersion
			r.Namespaces = []string{"user", "pid", "ipc", "uts", "cgroup", "mount"}
			if !spec.Egress {
				r.Namespaces = append(r.Namespaces, "net")
			}
		}
		r.Layers = append(r.Layers, "landlock")
	}
	prog, err := compileProfile(r.Seccomp)
	if err != nil {
		return nil, r, nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "seccomp profile %s: %v", r.Seccomp, err)
	}
	r.SeccompDigest = prog.Digest()
	plan := &stagePlan{Spec: *spec, Seccomp: r.Seccomp}
	if r.Backend == "bwrap" {
		plan.Seccomp = "" // bwrap installs it
	}
	return plan, r, prog, nil
}

// filterPipe returns the read end of a pipe holding the compiled program,
// for bwrap's --seccomp.
func filterPipe(prog *seccomp.Program) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	// A program is at most a few thousand 8-byte instructions: it fits the
	// pipe's buffer, so this write does not block.
	if _, err := w.Write(prog.Bytes()); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
