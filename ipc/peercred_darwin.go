package ipc

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerCred reads LOCAL_PEERCRED (and LOCAL_PEERPID for logs): the credentials
// the peer had when it connected.
func PeerCred(nc *net.UnixConn) (Cred, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var xc *unix.Xucred
	var pid int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		xc, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if serr == nil {
			pid, _ = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	}); err != nil {
		return Cred{}, err
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("LOCAL_PEERCRED: %w", serr)
	}
	var gid uint32
	if xc.Ngroups > 0 {
		gid = xc.Groups[0]
	}
	return Cred{UID: xc.Uid, GID: gid, PID: int32(pid)}, nil
}

// DescendsFrom is not implemented on macOS: it reports false. Executors
// there are confined by Seatbelt, which denies connecting to the sockets.
func DescendsFrom(pid int32, name string) bool { return false }

// PeerDescendsFrom is not implemented on macOS: it reports false.
func (c *Conn) PeerDescendsFrom(name string) bool { return false }

// PeerGroups returns the groups the peer had when it connected
// (LOCAL_PEERCRED's group list, the first of which is the effective gid),
// sorted and without repeats.
func PeerGroups(nc *net.UnixConn) ([]uint32, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var xc *unix.Xucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		xc, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("LOCAL_PEERCRED: %w", serr)
	}
	n := min(int(xc.Ngroups), len(xc.Groups))
	if n == 0 {
		return nil, nil
	}
	return normalGroups(xc.Groups[0], xc.Groups[1:n]), nil
}
