package executor

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/stockade-dev/stockade/ipc"
)

// maxScanEntries bounds the hardlink scan of a workspace.
const maxScanEntries = 100_000

var errScanLimit = errors.New("scan limit")

// checkHardlinks refuses a writable workspace that holds a regular file with
// more than one link. Landlock and bind mounts confine paths, not inodes: a
// hardlink planted in the workspace by someone outside the sandbox would let
// the target write the file it points to wherever that lives. The target
// itself cannot plant one (Landlock refuses links to files outside its
// domain). A link planted after this check, during the call, is not caught;
// see docs/THREAT_MODEL.md.
func checkHardlinks(dir string) error {
	n := 0
	var found string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts are unreadable to the target too
		}
		if n++; n > maxScanEntries {
			return errScanLimit
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	switch {
	case errors.Is(err, errScanLimit):
		return ipc.Errorf(ipc.ClassInvalidInput, "the workspace has more than %d entries: too many to check for hardlinks (a tool may set workspace_hardlinks = \"allow\")", maxScanEntries)
	case found != "":
		rel, _ := filepath.Rel(dir, found)
		return ipc.Errorf(ipc.ClassInvalidInput, "the workspace holds a hardlinked file (%s): a writable workspace may not, since the target could write through it to another place", rel)
	}
	return nil
}
