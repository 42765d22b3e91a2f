package ipc

import (
	"fmt"
	"net"

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
