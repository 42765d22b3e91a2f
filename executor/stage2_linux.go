package executor

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// Stage2 is the second stage: it reads the spec that stage 1 writes on fd 3,
// confines itself and execs the target. It returns only on failure, with the
// exit status to use, after telling stage 1 why on fd 3.
//
// The order is fixed, each step needing the ones before:
//  1. every descriptor above 2 close-on-exec (fd 3 included, so stage 1
//     reads EOF once the target runs, and the target inherits nothing);
//  2. argv and envp built, so nothing allocates after the limits;
//  3. rlimits, RLIMIT_AS last (the Go runtime must not run under it);
//  4. PR_SET_NO_NEW_PRIVS: no setuid gain, and the precondition for an
//     unprivileged seccomp filter;
//  5. (Tier C) Landlock, then seccomp — seccomp last because it may deny the
//     calls the earlier steps make;
//  6. execve.
func Stage2() int {
	f := os.NewFile(3, "stage")
	spec, err := readStageSpec(f)
	if err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage could not read its spec"))
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot close inherited descriptors"))
	}
	ex, err := prepareExec(spec.Path, spec.Argv, spec.Env)
	if err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassInvalidInput, "argument or environment holds NUL"))
	}
	// Written now: after RLIMIT_AS nothing may allocate.
	execFailed, _ := ipc.EncodeEnvelope(0, ipc.KindError, ipc.Errorf(ipc.ClassFailed, "cannot execute %s", spec.Argv[0]))
	execFailed = ipc.AppendFrame(nil, execFailed)

	l := spec.Limits
	limits := []struct {
		res      int
		cur, max uint64
	}{
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_NOFILE, l.NoFile, l.NoFile},
		{unix.RLIMIT_NPROC, l.NProc, l.NProc},
		{unix.RLIMIT_FSIZE, l.FileSize, l.FileSize},
		// SIGXCPU at the soft limit, SIGKILL a second later.
		{unix.RLIMIT_CPU, l.CPUSeconds, l.CPUSeconds + 1},
		{unix.RLIMIT_AS, l.AddressSpace, l.AddressSpace},
	}
	for _, r := range limits {
		if r.cur == 0 && r.res != unix.RLIMIT_CORE {
			continue // zero: not configured
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.cur, Max: r.max}); err != nil {
			return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot set resource limits"))
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		_, _ = f.Write(execFailed)
		return 126
	}
	_ = ex.exec()
	_, _ = f.Write(execFailed)
	return 127
}

func readStageSpec(f *os.File) (*ipc.ExecSpec, error) {
	body, err := ipc.ReadFrame(f, ipc.ControlFrameMax)
	if err != nil {
		return nil, err
	}
	m, err := ipc.DecodeEnvelope(body)
	if err != nil {
		return nil, err
	}
	var spec ipc.ExecSpec
	if err := m.Decode(&spec); err != nil {
		return nil, err
	}
	if err := checkSpec(&spec); err != nil {
		return nil, err
	}
	return &spec, nil
}

func stageFail(f *os.File, e *ipc.Error) int {
	if b, err := ipc.EncodeEnvelope(0, ipc.KindError, e); err == nil {
		_ = ipc.WriteFrame(f, b, ipc.ControlFrameMax)
	}
	return 126
}
