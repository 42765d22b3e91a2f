package main

import (
	"log/slog"
	"syscall"

	"golang.org/x/sys/unix"
)

// sweepOrphans has nothing to do on macOS, which has no child subreaper: the
// executors' process groups are killed by the executors themselves.
func sweepOrphans(*slog.Logger) {}

// becomeSubreaper: macOS has no child subreaper.
func becomeSubreaper(*slog.Logger) {}

// socketpair makes a close-on-exec pair of type typ.
func socketpair(typ int) ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, typ, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	return fds, err
}

// childAttr puts a child in its own process group. macOS has no parent-death
// signal; the children notice the supervisor's sockets closing instead.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
