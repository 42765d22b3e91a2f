package executor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// dropCapabilities leaves the calling thread (the one that will exec the
// target) with no capability and no way to regain one: the bounding set and
// the ambient set are emptied, then the effective, permitted and inheritable
// sets. A target of a root-run Stockade is then root without privilege: no
// CAP_SYS_PTRACE to read other processes' /proc files, no CAP_MKNOD, no
// CAP_SYS_ADMIN for fanotify or mounts, no CAP_SYS_RESOURCE to raise its
// limits, and exec of a setuid-root or file-capability binary grants nothing.
// A thread without CAP_SETPCAP (not root) cannot shrink its bounding set, and
// needs not: it must simply hold no capability, which is checked.
func dropCapabilities() error {
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if errors.Is(err, unix.EPERM) {
			break // no CAP_SETPCAP; the sets below must then be empty
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	var got [2]unix.CapUserData
	if err := unix.Capget(&hdr, &got[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range got {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("capabilities remain after dropping them")
		}
	}
	return nil
}
