//go:build linux

package executor

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// preparedExec holds execve's arguments as C strings, built before the
// address-space limit so that the exec itself allocates nothing.
type preparedExec struct {
	path *byte
	argv []*byte // nil-terminated
	envv []*byte // nil-terminated
}

func prepareExec(path string, argv, env []string) (*preparedExec, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	a, err := cStrings(argv)
	if err != nil {
		return nil, err
	}
	e, err := cStrings(env)
	if err != nil {
		return nil, err
	}
	return &preparedExec{path: p, argv: a, envv: e}, nil
}

func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// exec replaces the process; it returns only on failure.
func (x *preparedExec) exec() error {
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE,
		uintptr(unsafe.Pointer(x.path)),
		uintptr(unsafe.Pointer(&x.argv[0])),
		uintptr(unsafe.Pointer(&x.envv[0])))
	return errno
}
