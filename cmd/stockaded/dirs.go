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

// defaultSystemStateDir is the state directory in multi-uid mode.
const defaultSystemStateDir = "/var/lib/stockade"

// dirSpec is a directory Stockade needs, with its owner and mode.
type dirSpec struct {
	path     string
	uid, gid uint32
	mode     os.FileMode // including os.ModeSticky
	// top: an existing directory only needs the owner and no write
	// permission for group or others (the operator may have made it).
	top bool
}

// dirPlan lists the runtime and state directories of the mode: in
// single-user mode all are the invoking uid's, 0700; in multi-uid mode the
// top directories are root's and searchable, each daemon owns its own state
// directory, and executors make their calls' directories in a sticky,
// unlistable scratch root.
func (s *supervisor) dirPlan() []dirSpec {
	if s.multi == nil {
		me, mine := uint32(os.Geteuid()), uint32(os.Getegid())
		return []dirSpec{
			{s.runtimeDir, me, mine, 0o700, true},
			{s.stateDir, me, mine, 0o700, true},
			{filepath.Join(s.stateDir, brokerDir), me, mine, 0o700, false},
			{filepath.Join(s.stateDir, verifierDir), me, mine, 0o700, false},
			{filepath.Join(s.stateDir, wasmDir), me, mine, 0o700, false},
		}
	}
	return []dirSpec{
		{s.runtimeDir, 0, 0, 0o755, true},
		{s.stateDir, 0, 0, 0o755, true},
		{filepath.Join(s.stateDir, brokerDir), s.multi.broker.uid, s.multi.broker.gid, 0o700, false},
		{filepath.Join(s.stateDir, verifierDir), s.multi.verifier.uid, s.multi.verifier.gid, 0o700, false},
		{filepath.Join(s.stateDir, scratchDir), 0, 0, 0o733 | os.ModeSticky, false},
		{filepath.Join(s.stateDir, wasmDir), s.multi.broker.uid, s.multi.broker.gid, 0o755, false},
	}
}

// prepareDirs makes the runtime and state directories that are missing,
// refuses those that exist with another owner or mode (stockaded setup
// fixes them), and takes an exclusive lock on the runtime directory so two
// supervisors never share it.
func (s *supervisor) prepareDirs() (unlock func(), err error) {
	for _, d := range s.dirPlan() {
		if _, err := ensureDir(d, false); err != nil {
			return nil, err
		}
	}
	if s.multi != nil {
		// Every role must reach its directory and the binaries.
		for _, d := range []string{s.runtimeDir, s.stateDir, s.binDir} {
			if err := searchable(d); err != nil {
				return nil, err
			}
		}
		// Root starts the role binaries: nobody else may be able to
		// change them. (The configuration was checked before it was
		// read: configRootOnly.)
		check := []string{s.binDir}
		for _, b := range []string{"stockade-broker", "stockade-verifier", "stockade-exec"} {
			check = append(check, filepath.Join(s.binDir, b))
		}
		for _, p := range check {
			if err := rootOnly(p); err != nil {
				return nil, err
			}
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

// ensureDir makes d if it is missing (its parents too, root's and 0755, or
// ours and 0700 when not root). An existing d must be a real directory (not
// a symlink); with another owner or mode it is an error, unless fix is set,
// in which case it is corrected. It says what it did.
func ensureDir(d dirSpec, fix bool) (string, error) {
	fi, err := os.Lstat(d.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parentMode := os.FileMode(0o755)
		if os.Geteuid() != 0 {
			parentMode = 0o700
		}
		if err := os.MkdirAll(filepath.Dir(d.path), parentMode); err != nil {
			return "", err
		}
		if err := os.Mkdir(d.path, 0o700); err != nil {
			return "", err
		}
		if err := setOwnerMode(d); err != nil {
			return "", err
		}
		return "created " + describe(d), nil
	case err != nil:
		return "", err
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", d.path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && st.Uid == d.uid && st.Gid == d.gid && fi.Mode()&(os.ModePerm|os.ModeSticky) == d.mode {
		return "ok " + describe(d), nil
	}
	if ok && d.top && st.Uid == d.uid && fi.Mode().Perm()&0o022 == 0 {
		return fmt.Sprintf("ok %s (owner %d, mode %04o)", d.path, st.Uid, fi.Mode().Perm()), nil
	}
	if !fix {
		return "", fmt.Errorf("%s: want %s (run stockaded setup to fix it)", d.path, describe(d))
	}
	if err := setOwnerMode(d); err != nil {
		return "", err
	}
	return "fixed " + describe(d), nil
}

func setOwnerMode(d dirSpec) error {
	if uint32(os.Geteuid()) == 0 {
		if err := os.Lchown(d.path, int(d.uid), int(d.gid)); err != nil {
			return err
		}
	}
	return os.Chmod(d.path, d.mode)
}

func describe(d dirSpec) string {
	mode := uint32(d.mode.Perm())
	if d.mode&os.ModeSticky != 0 {
		mode |= 0o1000
	}
	return fmt.Sprintf("%s (owner %d:%d, mode %04o)", d.path, d.uid, d.gid, mode)
}

// rootOnly refuses a file or directory that is not root's or that group or
// others can write.
func rootOnly(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s must be root's and not writable by group or others (mode %04o)", p, fi.Mode().Perm())
	}
	return nil
}

// configRootOnly refuses a configuration file that is not root's, or
// whose directory is not, or that group or others could write or replace:
// root reads the file to learn who the roles run as, so it is checked
// before it is read. "" (the embedded configuration) passes.
func configRootOnly(path string) error {
	if path == "" {
		return nil
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		if err := rootOnly(p); err != nil {
			return err
		}
	}
	return nil
}

// searchable refuses a directory that, or one of whose ancestors, others
// cannot search: the roles would not reach what is inside.
func searchable(d string) error {
	for p := d; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is not searchable by others (mode %v): the roles could not reach %s", p, fi.Mode().Perm(), d)
		}
		if p == "/" {
			return nil
		}
	}
}

// listen creates agent.sock and admin.sock. In single-user mode they are
// 0600 (only the invoking uid, and root, can connect); in multi-uid mode
// agent.sock is root's and the agent group's (0660; 0666 when several agent
// groups are configured) and admin.sock root's and the admin group's
// (0660). Each role checks the peer's credentials again. A stale socket from
// a dead supervisor is replaced; the runtime directory lock says no live one
// uses it.
func (s *supervisor) listen() error {
	old := unix.Umask(0o177)
	defer unix.Umask(old)
	agentGID, agentMode, adminGID, adminMode := -1, os.FileMode(0o600), -1, os.FileMode(0o600)
	if s.multi != nil {
		agentGID, agentMode = int(s.multi.agentGIDs[0]), 0o660
		if len(s.multi.agentGIDs) > 1 {
			agentMode = 0o666
		}
		adminGID, adminMode = int(s.multi.adminGID), 0o660
	}
	var err error
	if s.agentLn, err = listenUnix(filepath.Join(s.runtimeDir, ipc.AgentSocketName), agentGID, agentMode); err != nil {
		return err
	}
	if s.adminLn, err = listenUnix(filepath.Join(s.runtimeDir, ipc.AdminSocketName), adminGID, adminMode); err != nil {
		s.agentLn.Close()
		return err
	}
	return nil
}

func listenUnix(path string, gid int, mode os.FileMode) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if gid >= 0 {
		if err := os.Lchown(path, 0, gid); err != nil {
			ln.Close()
			return nil, err
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func (s *supervisor) closeListeners() {
	s.agentLn.Close()
	s.adminLn.Close()
}
