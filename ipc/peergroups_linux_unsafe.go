//go:build linux

package ipc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getPeerGroups reads SO_PEERGROUPS into a buffer of gids: x/sys has no
// typed getter for it (GetsockoptString stops at the first NUL byte).
func getPeerGroups(fd int) ([]uint32, error) {
	gids := make([]uint32, 64)
	for {
		n := uint32(len(gids) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&gids[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case e == unix.ERANGE && int(n/4) > len(gids) && n/4 <= 1<<16:
			gids = make([]uint32, n/4)
			continue
		case e != 0:
			return nil, e
		}
		return gids[:n/4], nil
	}
}
