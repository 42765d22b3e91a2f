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

// PeerDescendsFrom reports whether the peer descends from a process named
// name (see [DescendsFrom]). Where the kernel gives a pidfd for the peer
// (SO_PEERPIDFD, Linux 6.5+), the peer must still be alive once the walk is
// done: then its pid cannot have been reused by another process meanwhile.
func (c *Conn) PeerDescendsFrom(name string) bool {
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
	if DescendsFrom(c.peer.PID, name) {
		return true
	}
	if pidfd < 0 {
		return false
	}
	// A pidfd polls readable once its process has exited. (Not a signal 0:
	// a daemon confined by Landlock's signal scope may not signal the peer.)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n != 0
}

// DescendsFrom reports whether process pid, or any of its ancestors, runs a
// program whose name (the kernel's comm, /proc/PID/stat) is name. The broker
// and the verifier use it with "stockade-exec" to refuse connections from the
// processes of a call, whose ancestor is always an executor (a child
// subreaper): in single-user mode they share the caller's uid, so the uid
// alone cannot tell them apart. A process of a call cannot rename its
// ancestors, and the check reads only /proc/PID/stat, which stays readable
// when the checking daemon is itself confined by Landlock (/proc/PID/exe does
// not). A process whose ancestry cannot be read (gone, or unreadable) is
// reported as descending: the check fails closed.
func DescendsFrom(pid int32, name string) bool {
	if len(name) > 15 {
		name = name[:15] // comm holds 15 bytes
	}
	for hops := 0; pid > 1 && hops < 128; hops++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			// Gone or unreadable: a process of a call could connect, hand the
			// socket to its child and exit before this check. Refuse.
			return true
		}
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open {
			return true
		}
		if string(b[open+1:close]) == name {
			return true
		}
		f := strings.Fields(string(b[close+1:]))
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

// PeerGroups returns the groups the peer had when it connected: its primary
// gid (SO_PEERCRED) and its supplementary groups (SO_PEERGROUPS, Linux
// 4.13+), sorted and without repeats. A server that admits peers by group
// (admin.sock's admin groups, agent.sock's agent groups) asks the kernel
// this, never the peer.
func PeerGroups(nc *net.UnixConn) ([]uint32, error) {
	cred, err := PeerCred(nc)
	if err != nil {
		return nil, err
	}
	raw, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var gids []uint32
	var serr error
	if err := raw.Control(func(fd uintptr) { gids, serr = getPeerGroups(int(fd)) }); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("SO_PEERGROUPS: %w", serr)
	}
	return normalGroups(cred.GID, gids), nil
}
