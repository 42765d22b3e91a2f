package executor

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// Stage2 is the second stage on macOS: it reads the plan on fd 3, marks every
// descriptor above 2 close-on-exec, sets the rlimits and execs the target
// (already inside sandbox-exec's Seatbelt profile in Tier C). It returns only
// on failure, after telling stage 1 why.
func Stage2() int {
	f := os.NewFile(3, "stage")
	plan, err := readStagePlan(f)
	if err != nil {
		return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage could not read its plan"))
	}
	spec := &plan.Spec
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil {
		for fd := 3; fd < int(min(lim.Cur, 1<<16)); fd++ {
			unix.CloseOnExec(fd)
		}
	}
	l := spec.Limits
	for _, r := range []struct {
		res      int
		cur, max uint64
	}{
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_NOFILE, l.NoFile, l.NoFile},
		{unix.RLIMIT_NPROC, l.NProc, l.NProc},
		{unix.RLIMIT_FSIZE, l.FileSize, l.FileSize},
		{unix.RLIMIT_CPU, l.CPUSeconds, l.CPUSeconds + 1},
		{unix.RLIMIT_AS, l.AddressSpace, l.AddressSpace},
	} {
		if r.cur == 0 && r.res != unix.RLIMIT_CORE {
			continue
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.cur, Max: r.max}); err != nil {
			return stageFail(f, ipc.Errorf(ipc.ClassSandboxUnavailable, "cannot set resource limits"))
		}
	}
	report, _ := ipc.EncodeEnvelope(0, ipc.KindStatus, stageReport{})
	if err := ipc.WriteFrame(f, report, ipc.ControlFrameMax); err != nil {
		return 126
	}
	err = syscall.Exec(spec.Path, spec.Argv, spec.Env)
	return stageFail(f, ipc.Errorf(ipc.ClassFailed, "cannot execute %s: %v", spec.Argv[0], err))
}
