//go:build unix

package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// checkOwned refuses what is not ours to trust: another owner, a mode
// writable by group or others, a hard link, or the wrong file type.
func checkOwned(fi fs.FileInfo, dir bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner information")
	}
	switch {
	case dir && !fi.IsDir():
		return errors.New("not a directory")
	case !dir && !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("mode %v is writable by group or others", fi.Mode().Perm())
	case !dir && st.Nlink != 1:
		return fmt.Errorf("%d links", st.Nlink)
	}
	return nil
}

// lockFile takes an exclusive lock on f, without waiting.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
