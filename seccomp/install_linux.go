package seccomp

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Install puts p in force on every thread of the calling process, for good:
// it sets PR_SET_NO_NEW_PRIVS, then loads the filter with
// SECCOMP_FILTER_FLAG_TSYNC so that all Go threads, present and future, are
// filtered. Child processes inherit the filter across fork and execve.
//
// Any failure is returned as an error wrapping ErrInstall, and the caller
// must then stop: never run the target, or serve, unfiltered. Before
// loading, Install checks that p is for this architecture and that the
// kernel knows every action p returns (an unknown one would kill).
func Install(p *Program) error {
	if p == nil || len(p.insns) == 0 {
		return fmt.Errorf("%w: empty program", ErrInstall)
	}
	if p.arch != NativeArch() {
		return fmt.Errorf("%w: program for %s on %s", ErrInstall, p.arch, NativeArch())
	}
	if err := validate(p.insns); err != nil {
		return fmt.Errorf("%w: %w", ErrInstall, err)
	}
	filter := make([]unix.SockFilter, len(p.insns))
	actions := map[uint32]bool{}
	for i, in := range p.insns {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
		if in.Code == bpfRET|bpfK {
			actions[in.K&actionMask] = true
		}
	}
	for action := range actions {
		if err := seccompActionAvail(action); err != nil {
			return fmt.Errorf("%w: kernel lacks action %v: %w", ErrInstall, Action(action), err)
		}
	}

	// no_new_privs is per thread, and the kernel copies it to the other
	// threads during TSYNC only from the thread that loads the filter: both
	// calls must run on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%w: PR_SET_NO_NEW_PRIVS: %w", ErrInstall, err)
	}
	tid, err := seccompSetFilter(unix.SECCOMP_FILTER_FLAG_TSYNC, filter)
	if err != nil {
		return fmt.Errorf("%w: seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", ErrInstall, err)
	}
	if tid != 0 {
		return fmt.Errorf("%w: thread %d could not be synchronized", ErrInstall, tid)
	}
	return nil
}
