//go:build unix

package attest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// openNoFollow opens path for reading, refusing a symlink in its last
// component.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

// ownedBySelf checks that a file belongs to the effective uid.
func ownedBySelf(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("cannot read the file's owner")
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("owned by uid %d, not by this process's uid %d", st.Uid, uid)
	}
	return nil
}

// syncDir makes a directory's entries durable. Filesystems that cannot
// sync a directory (EINVAL, ENOTSUP) are let be: there is nothing more to
// do on them.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return syncDirFile(d)
}

func syncDirFile(d *os.File) error {
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("attest: syncing %s: %w", d.Name(), err)
	}
	return nil
}

// lockDir takes an exclusive, non-blocking flock on an open directory: one
// writer per log. The lock goes with the open file, so a crashed writer
// leaves none behind. A lock that is busy is tried again for lockWait: a
// process forked by the previous holder (the lock is shared with a child
// until it execs) or a broker still exiting lets go within that.
func lockDir(d *os.File) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case err == syscall.EINTR:
		case err == syscall.EWOULDBLOCK:
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %s is locked by another process", ErrLogBusy, d.Name())
			}
			time.Sleep(10 * time.Millisecond)
		default:
			return fmt.Errorf("attest: locking %s: %w", d.Name(), err)
		}
	}
}

const lockWait = 500 * time.Millisecond
