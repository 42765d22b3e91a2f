package privdrop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Drop makes the calling process id for good: the bounding set and the
// ambient set emptied, supplementary groups set to exactly id.Groups, gid
// and uid (real, effective, saved) set, PR_SET_NO_NEW_PRIVS and
// PR_SET_DUMPABLE=0 set, and every descriptor above keep marked
// close-on-exec. Then it checks the result with Check. It must run as root
// and it leaves the goroutine locked to its thread: the caller execs next,
// from this goroutine.
func Drop(id Identity, keep int) error {
	if id.UID == 0 || id.GID == 0 {
		return errors.New("privdrop: refusing to drop to uid or gid 0")
	}
	runtime.LockOSThread()
	// The bounding set first: dropping needs CAP_SETPCAP, lost with root.
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("privdrop: dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("privdrop: clearing the ambient set: %w", err)
	}
	groups := make([]int, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = int(g)
	}
	// The Go runtime applies these to every thread.
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("privdrop: setgroups: %w", err)
	}
	if err := syscall.Setresgid(int(id.GID), int(id.GID), int(id.GID)); err != nil {
		return fmt.Errorf("privdrop: setresgid: %w", err)
	}
	if err := syscall.Setresuid(int(id.UID), int(id.UID), int(id.UID)); err != nil {
		return fmt.Errorf("privdrop: setresuid: %w", err)
	}
	// setresuid cleared the permitted and effective sets, not the
	// inheritable one: empty every set of this thread.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("privdrop: capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("privdrop: no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("privdrop: dumpable: %w", err)
	}
	if err := unix.CloseRange(uint(keep+1), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("privdrop: marking descriptors close-on-exec: %w", err)
	}
	return Check()
}

// Check returns an error wrapping ErrPrivileged when the process (this
// thread's credentials, as /proc/thread-self/status shows them) has uid or
// gid 0 in any slot, any capability in any set, or NoNewPrivs unset, or
// when setuid(0) or setgid(0) would succeed. It is what a role runs first in
// multi-uid mode: a role that could regain root refuses to run.
func Check() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return fmt.Errorf("privdrop: %w", err)
	}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(st))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Uid", "Gid":
			for _, f := range strings.Fields(v) {
				if f == "0" {
					problems = append(problems, k+" "+v)
					break
				}
			}
		case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb":
			if n, err := strconv.ParseUint(v, 16, 64); err != nil || n != 0 {
				problems = append(problems, k+" "+v)
			}
		case "NoNewPrivs":
			if v != "1" {
				problems = append(problems, "NoNewPrivs "+v)
			}
		}
	}
	// The kernel's word, not only the status file's. These raw calls touch
	// only this thread; if one succeeded, the process is privileged and
	// about to exit anyway.
	if _, _, e := unix.RawSyscall(unix.SYS_SETUID, 0, 0, 0); e == 0 {
		problems = append(problems, "setuid(0) succeeded")
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGID, 0, 0, 0); e == 0 {
		problems = append(problems, "setgid(0) succeeded")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrPrivileged, strings.Join(problems, ", "))
	}
	return nil
}

// Harden sets PR_SET_DUMPABLE=0 (execve resets it): no core dumps, and
// /proc/PID of the process owned by root, so that even a same-uid process
// cannot ptrace it or read its memory or environment.
func Harden() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// lastCap is the highest capability the kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 63
	}
	return n
}
