package executor

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// processTree is everything a call started: the target's process group, and
// every orphan reparented to this process (a child subreaper).
type processTree struct {
	pgid int
	log  *slog.Logger
}

// kill sends SIGKILL to the target's process group and to every child of this
// process. Descendants of those children are reparented here when their
// parent dies and are found by the next kill.
func (t *processTree) kill() {
	_ = unix.Kill(-t.pgid, unix.SIGKILL)
	for _, pid := range ChildrenOf(os.Getpid()) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// reapTimeout bounds how long reap keeps killing; a tree that outlives it is
// logged (cgroups and pid namespaces make this impossible in Tier C).
const reapTimeout = 5 * time.Second

// reap kills and waits for children until none is left.
func (t *processTree) reap() {
	end := time.Now().Add(reapTimeout)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return
		case errors.Is(err, unix.EINTR), pid > 0:
			continue
		}
		if time.Now().After(end) {
			t.log.Error("processes of the call survive", "pids", ChildrenOf(os.Getpid()))
			return
		}
		t.kill()
		time.Sleep(time.Millisecond)
	}
}

// ChildrenOf lists the children of process parent by scanning /proc for
// processes whose parent it is (kernels built without CONFIG_PROC_CHILDREN
// lack the per-thread children file). Callers run it only when wait4 says
// children remain.
func ChildrenOf(parent int) []int {
	self := parent
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// reapAll reaps every child that has exited, without waiting.
func reapAll() {
	for {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
