package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// uidPool hands each executor a uid nobody else holds. A uid comes back
// only after its executor exited and no live process of it remains: the
// pool kills every process of the uid (stragglers a target left) and removes
// its files from the scratch root before the uid is handed out again. Free
// uids are reused least recently first.
type uidPool struct {
	log         *slog.Logger
	self        string // this executable, for killUIDCommand
	scratchRoot string

	mu   sync.Mutex
	free []uint32
	wake chan struct{} // closed and replaced when a uid comes back
}

func newUIDPool(log *slog.Logger, self string, first, last uint32, scratchRoot string) (*uidPool, error) {
	p := &uidPool{log: log, self: self, scratchRoot: scratchRoot, wake: make(chan struct{})}
	// A previous supervisor may have died with executors running: clean
	// every uid of the range that has a process or a file in the scratch
	// root.
	dirty := map[uint32]bool{}
	for _, uid := range processUIDs() {
		if uid >= first && uid <= last {
			dirty[uid] = true
		}
	}
	if ents, err := os.ReadDir(scratchRoot); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid >= first && st.Uid <= last {
					dirty[st.Uid] = true
				}
			}
		}
	}
	for uid := range dirty {
		if err := p.clean(uid); err != nil {
			return nil, err
		}
	}
	for uid := first; ; uid++ {
		p.free = append(p.free, uid)
		if uid == last { // last may be the largest uint32
			break
		}
	}
	return p, nil
}

// tryAcquire takes a free uid without waiting.
func (p *uidPool) tryAcquire() (uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return 0, false
	}
	uid := p.free[0]
	p.free = p.free[1:]
	return uid, true
}

// acquire waits for a free uid until ctx ends. It never shares a uid.
func (p *uidPool) acquire(ctx context.Context) (uint32, error) {
	for {
		p.mu.Lock()
		if len(p.free) > 0 {
			uid := p.free[0]
			p.free = p.free[1:]
			p.mu.Unlock()
			return uid, nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, fmt.Errorf("no executor uid free: %w", ctx.Err())
		}
	}
}

// release takes back uid after its executor exited: it is handed out again
// only once clean. A uid that cannot be cleaned is kept out of the pool.
func (p *uidPool) release(uid uint32) {
	if err := p.clean(uid); err != nil {
		p.log.Error("executor uid kept out of the pool", "uid", uid, "err", err)
		return
	}
	p.mu.Lock()
	p.free = append(p.free, uid)
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// clean kills every process of uid, reaps those that were reparented to
// the supervisor, and removes what uid left in the scratch root.
func (p *uidPool) clean(uid uint32) error {
	if err := killUID(p.self, uid, 5*time.Second); err != nil {
		return err
	}
	reapZombies(uid)
	ents, err := os.ReadDir(p.scratchRoot)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == uid {
			// No process of uid is alive to race this, and the entries
			// are its own (0700): RemoveAll does not follow symlinks.
			if err := os.RemoveAll(filepath.Join(p.scratchRoot, e.Name())); err != nil {
				return fmt.Errorf("removing what uid %d left: %w", uid, err)
			}
		}
	}
	return nil
}

// killUID sends SIGKILL to every process of uid until none is alive. The
// signal is sent by the uid itself: a short-lived copy of stockaded
// (killUIDCommand) takes the uid and calls kill(-1), which reaches exactly
// the processes whose real or saved uid is uid, in any namespace, with no
// window for a fork to escape a scan. (Doing it from a thread of the
// supervisor is not safe: Go may run that thread as the main thread, whose
// credentials are the process's for every permission check.)
func killUID(self string, uid uint32, within time.Duration) error {
	if uid == 0 {
		return errors.New("refusing to kill every process of uid 0")
	}
	end := time.Now().Add(within)
	for {
		cmd := exec.Command(self, killUIDCommand, strconv.FormatUint(uint64(uid), 10))
		cmd.Env = []string{}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("killing the processes of uid %d: %v: %s", uid, err, out)
		}
		if !liveProcessOf(uid) {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("processes of uid %d survive SIGKILL", uid)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killUIDCommand is `stockaded kill-uid UID`, run by the supervisor (root):
// it becomes UID (every thread, for good) and sends SIGKILL to every
// process of UID but itself.
const killUIDCommand = "kill-uid"

func runKillUID(args []string) int {
	if len(args) != 1 || os.Getuid() != 0 {
		fmt.Fprintln(os.Stderr, "stockaded kill-uid: started by stockaded only")
		return 2
	}
	uid, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || uid == 0 {
		fmt.Fprintln(os.Stderr, "stockaded kill-uid: bad uid")
		return 2
	}
	if err := syscall.Setresuid(int(uid), int(uid), int(uid)); err != nil {
		fmt.Fprintln(os.Stderr, "stockaded kill-uid: setresuid:", err)
		return 1
	}
	if err := unix.Kill(-1, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		fmt.Fprintln(os.Stderr, "stockaded kill-uid: kill(-1):", err)
		return 1
	}
	return 0
}

// reapZombies reaps the supervisor's zombie children of uid. The processes
// of a call whose executor died before them are reparented to the
// supervisor (a child subreaper); once killUID has killed them they are
// zombies nobody else waits for. Each is waited for by its pid, never with
// wait4(-1), which would take exit statuses os/exec is waiting for. No
// child the supervisor started runs as uid now: its executor has been
// waited for before the uid is cleaned, and so has every kill-uid.
func reapZombies(uid uint32) {
	me := os.Getpid()
	var pids []int
	eachProcess(func(p procInfo) bool {
		if p.zombie && p.ppid == me && slices.Contains(p.uids, uid) {
			pids = append(pids, p.pid)
		}
		return true
	})
	for _, pid := range pids {
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
}

// processUIDs lists the real, effective and saved uids of every process.
func processUIDs() []uint32 {
	var out []uint32
	eachProcess(func(p procInfo) bool {
		out = append(out, p.uids...)
		return true
	})
	return out
}

// liveProcessOf reports whether a process other than a zombie has uid as
// its real, effective or saved uid.
func liveProcessOf(uid uint32) bool {
	found := false
	eachProcess(func(p procInfo) bool {
		if !p.zombie && slices.Contains(p.uids, uid) {
			found = true
		}
		return !found
	})
	return found
}

// procInfo is what eachProcess reads of /proc/PID/status.
type procInfo struct {
	pid, ppid int
	uids      []uint32 // real, effective, saved, filesystem
	zombie    bool
}

// eachProcess calls f with the status of each process but this one, until
// f returns false.
func eachProcess(f func(procInfo) bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == me {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone
		}
		p := procInfo{pid: pid}
		for line := range strings.SplitSeq(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "State:"):
				p.zombie = strings.Contains(line, "(zombie)") || strings.Contains(line, "(dead)")
			case strings.HasPrefix(line, "PPid:"):
				p.ppid, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PPid:")))
			case strings.HasPrefix(line, "Uid:"):
				for _, v := range strings.Fields(line)[1:] {
					if n, err := strconv.ParseUint(v, 10, 32); err == nil {
						p.uids = append(p.uids, uint32(n))
					}
				}
			}
		}
		if !f(p) {
			return
		}
	}
}
