package executor

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/seccomp"
)

// Stage2 is the second stage: it reads the plan that stage 1 writes on fd 3,
// confines itself and execs the target. It returns only on failure, with the
// exit status to use, after telling stage 1 why on fd 3.
//
// The order is fixed, each step needing the ones before:
//  1. every descriptor above 2 close-on-exec (fd 3 included, so stage 1
//     reads EOF once the target runs, and the target inherits nothing);
//  2. argv, envp and the frames for stage 1 built, so that nothing allocates
//     after the address-space limit;
//  3. rlimits — all but RLIMIT_AS, which the Go runtime cannot live under
//     (it has reserved more address space than a target's limit) — then
//     every capability dropped (a root-run Stockade's target is root without
//     privilege);
//  4. PR_SET_NO_NEW_PRIVS: no setuid gain, and the precondition for Landlock
//     and seccomp without privilege;
//  5. Landlock (Tier C): files, TCP, signal and abstract-socket scopes, on
//     every thread;
//  6. seccomp, last of the filters because it may deny calls the earlier
//     steps make (unless bwrap installed it before starting this stage);
//  7. RLIMIT_AS, then execve.
func Stage2() int {
	// Capabilities, no_new_privs and the exec below belong to one thread:
	// stay on it.
	runtime.LockOSThread()
	f := os.NewFile(3, "stage")
	plan, err := readStagePlan(f)
	if err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage could not read its plan"))
	}
	spec := &plan.Spec
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot close inherited descriptors"))
	}
	ex, err := prepareExec(spec.Path, spec.Argv, spec.Env)
	if err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassInvalidInput, "argument or environment holds NUL"))
	}
	var prog *seccomp.Program
	if plan.Seccomp != "" {
		if prog, err = compileProfile(plan.Seccomp); err != nil {
			return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "seccomp profile %s: %v", plan.Seccomp, err))
		}
	}
	expectABI := 0
	if spec.Sandbox != nil {
		expectABI = min(LandlockABI(), maxLandlockABI)
	}
	report, _ := ipc.EncodeEnvelope(0, ipc.KindStatus, stageReport{LandlockABI: expectABI})
	report = ipc.AppendFrame(nil, report)
	execFailed, _ := ipc.EncodeEnvelope(0, ipc.KindError, ipc.Errorf(ipc.ClassFailed, "cannot execute %s", spec.Argv[0]))
	execFailed = ipc.AppendFrame(nil, execFailed)

	l := spec.Limits
	for _, r := range []struct {
		res      int
		cur, max uint64
	}{
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_NOFILE, l.NoFile, l.NoFile},
		{unix.RLIMIT_NPROC, l.NProc, l.NProc},
		{unix.RLIMIT_FSIZE, l.FileSize, l.FileSize},
		// SIGXCPU at the soft limit, SIGKILL a second later.
		{unix.RLIMIT_CPU, l.CPUSeconds, l.CPUSeconds + 1},
	} {
		if r.cur == 0 && r.res != unix.RLIMIT_CORE {
			continue // zero: not configured
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.cur, Max: r.max}); err != nil {
			return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot set resource limits"))
		}
	}
	if err := dropCapabilities(); err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot drop capabilities: %v", err))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot set no_new_privs"))
	}
	if spec.Sandbox != nil {
		abi, err := applyLandlock(spec.Sandbox, spec.Egress)
		if err != nil {
			return stageFail(f, asError(err))
		}
		if abi != expectABI {
			return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "Landlock enforced ABI %d, expected %d", abi, expectABI))
		}
	}
	if prog != nil {
		if err := seccomp.Install(prog); err != nil {
			return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "seccomp: %v", err))
		}
	}
	if l.AddressSpace != 0 {
		if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: l.AddressSpace, Max: l.AddressSpace}); err != nil {
			_, _ = f.Write(execFailed)
			return 126
		}
	}
	if _, err := f.Write(report); err != nil {
		return 126
	}
	_ = ex.exec()
	_, _ = f.Write(execFailed)
	return 127
}

func compileProfile(name string) (*seccomp.Program, error) {
	p, err := seccomp.Named(name)
	if err != nil {
		return nil, err
	}
	return p.Compile(seccomp.NativeArch())
}
