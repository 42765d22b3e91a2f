//go:build linux

package seccomp

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The two seccomp(2) operations that take a pointer. x/sys/unix has no
// wrapper for seccomp(2), so they are raw system calls here.

// seccompSetFilter loads filter with SECCOMP_SET_MODE_FILTER and flags. With
// SECCOMP_FILTER_FLAG_TSYNC, a positive result is the id of a thread that
// could not be synchronized.
func seccompSetFilter(flags uintptr, filter []unix.SockFilter) (uintptr, error) {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// seccompActionAvail asks whether the kernel knows action
// (SECCOMP_GET_ACTION_AVAIL, Linux 4.14).
func seccompActionAvail(action uint32) error {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return errno
	}
	return nil
}
