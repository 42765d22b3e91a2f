package ipc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PeerCred reads SO_PEERCRED: the credentials the peer had when it connected
// (or, for a socketpair, when the pair was made).
func PeerCred(nc *net.UnixConn) (Cred, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var uc *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		uc, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Cred{}, err
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	return Cred{UID: uc.Uid, GID: uc.Gid, PID: uc.Pid}, nil
}

// PeerDescendsFrom reports whether the peer descends from the executable at
// path (see [DescendsFrom]). Where the kernel gives a pidfd for the peer
// (SO_PEERPIDFD, Linux 6.5+), the peer must still be alive once the walk is
// done: then its pid cannot have been reused by another process meanwhile.
func (c *Conn) PeerDescendsFrom(path string) bool {
	raw, err := c.nc.SyscallConn()
	if err != nil {
		return true
	}
	pidfd := -1
	_ = raw.Control(func(fd uintptr) {
		if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd = v
		}
	})
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	if DescendsFrom(c.peer.PID, path) {
		return true
	}
	return pidfd >= 0 && unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil
}

// DescendsFrom reports whether process pid, or any of its ancestors, runs the
// executable at path (compared by /proc/PID/exe). The broker and the verifier
// use it to refuse connections from the processes of a call, whose ancestor
// is always an executor (a child subreaper): in single-user mode they share
// the caller's uid, so the uid alone cannot tell them apart. A process whose
// ancestry cannot be read is reported as descending, so the check fails
// closed.
func DescendsFrom(pid int32, path string) bool {
	for hops := 0; pid > 1 && hops < 128; hops++ {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err == nil && exe == path {
			return true
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			// Gone or unreadable: a process of a call could connect, hand the
			// socket to its child and exit before this check. Refuse.
			return true
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return true
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			return true
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			return true
		}
		pid = int32(ppid)
	}
	return false
}
