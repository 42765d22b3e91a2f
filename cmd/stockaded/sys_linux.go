package main

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/executor"
)

// sweepOrphans kills and reaps every remaining child of the supervisor: the
// roles and executors have been waited for, so anything left is an orphan
// reparented here (the supervisor is a child subreaper).
func sweepOrphans(log *slog.Logger) {
	end := time.Now().Add(5 * time.Second)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return
		case errors.Is(err, unix.EINTR), pid > 0:
			continue
		}
		kids := executor.ChildrenOf(os.Getpid())
		if time.Now().After(end) {
			log.Error("processes survive shutdown", "pids", kids)
			return
		}
		for _, k := range kids {
			_ = unix.Kill(k, unix.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// becomeSubreaper makes orphaned descendants children of the supervisor.
func becomeSubreaper(log *slog.Logger) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become a child subreaper", "err", err)
	}
}

// socketpair makes a close-on-exec pair of type typ.
func socketpair(typ int) ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
}

// childAttr puts a child in its own process group (terminal signals reach
// only the supervisor) and kills it if the supervisor dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
