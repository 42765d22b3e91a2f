//go:build unix

package install

import (
	"io/fs"
	"os"
	"syscall"
)

// permBits are the mode bits Load compares.
const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// checkEntry refuses what Install would not have made: another owner,
// a hard link, a type other than dir wants, or a mode other than want.
func checkEntry(path string, fi fs.FileInfo, dir bool, want fs.FileMode) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return refuse(ReasonIO, path, "no owner information")
	}
	switch {
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return refuse(ReasonNotRegular, path, "type %v", fi.Mode().Type())
	case int(st.Uid) != os.Getuid():
		return refuse(ReasonOwner, path, "owned by uid %d, not %d", st.Uid, os.Getuid())
	case !dir && st.Nlink != 1:
		return refuse(ReasonNotRegular, path, "%d hard links", st.Nlink)
	case fi.Mode()&permBits != want&permBits:
		return refuse(ReasonMode, path, "mode %v, want %v", fi.Mode(), want)
	}
	return nil
}

// checkRootInfo refuses a root that is not a directory owned by us, or that
// group or others may write.
func checkRootInfo(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return refuse(ReasonRootUnsafe, path, "no owner information")
	case !fi.IsDir():
		return refuse(ReasonRootUnsafe, path, "not a directory (%v)", fi.Mode().Type())
	case int(st.Uid) != os.Getuid():
		return refuse(ReasonRootUnsafe, path, "owned by uid %d, not %d", st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return refuse(ReasonRootUnsafe, path, "mode %v is writable by group or others", fi.Mode().Perm())
	}
	return nil
}
