package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// prepareDirs makes the runtime and state directories (0700, ours), checks
// that nobody else owns or can write them, and takes an exclusive lock on the
// runtime directory so two supervisors never share it.
func (s *supervisor) prepareDirs() (unlock func(), err error) {
	for _, d := range []string{s.runtimeDir, s.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := checkPrivateDir(d); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(s.runtimeDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("another stockaded uses %s", s.runtimeDir)
	}
	return func() { unix.Close(fd) }, nil
}

// checkPrivateDir refuses a directory that is a symlink, is not ours, or that
// others can write.
func checkPrivateDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", d)
	case !ok || st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("%s is not owned by uid %d", d, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v)", d, fi.Mode().Perm())
	}
	return nil
}

// listen creates agent.sock and admin.sock, mode 0600 (single-user mode: only
// the invoking uid, and root, can connect; each role checks the peer's uid
// again). A stale socket from a dead supervisor is replaced; the runtime
// directory lock says no live one uses it.
func (s *supervisor) listen() error {
	old := unix.Umask(0o177)
	defer unix.Umask(old)
	var err error
	if s.agentLn, err = listenUnix(filepath.Join(s.runtimeDir, ipc.AgentSocketName)); err != nil {
		return err
	}
	if s.adminLn, err = listenUnix(filepath.Join(s.runtimeDir, ipc.AdminSocketName)); err != nil {
		s.agentLn.Close()
		return err
	}
	return nil
}

func listenUnix(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func (s *supervisor) closeListeners() {
	s.agentLn.Close()
	s.adminLn.Close()
}
