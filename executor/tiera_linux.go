package executor

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/seccomp"
)

// tierAProfile is the seccomp profile of a Tier A executor: the executor
// profile without networking, Unix sockets or SysV IPC; the broker's socket
// is already open.
const tierAProfile = "executor-sealed-nonet"

// confineSelf confines the executor before it compiles and runs a guest:
// every capability dropped, no new privileges, Landlock handling every
// right with no rule (no file system, no TCP, scoped signals and abstract
// sockets), and the Tier A seccomp profile on every thread. A runtime bug
// exploited by the guest lands in this process.
//
// cacheDir, when set, stays readable: the broker's compiled-code cache.
func confineSelf(cacheDir string) (ipc.Receipt, error) {
	r := ipc.Receipt{Tier: "A", Backend: "wazero"}
	if err := dropCapabilities(); err != nil {
		return r, fmt.Errorf("capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return r, fmt.Errorf("no_new_privs: %w", err)
	}
	r.Layers = append(r.Layers, "no_capabilities", "no_new_privs")
	abi := min(LandlockABI(), maxLandlockABI)
	if abi == 0 {
		return r, fmt.Errorf("no Landlock on this host")
	}
	var rules []landlock.Rule
	if cacheDir != "" {
		rules = append(rules, landlock.RODirs(cacheDir))
	}
	if err := landlockConfigs[abi].Restrict(rules...); err != nil {
		return r, fmt.Errorf("landlock: %w", err)
	}
	r.LandlockABI = abi
	prog, err := compileProfile(tierAProfile)
	if err != nil {
		return r, err
	}
	if err := seccomp.Install(prog); err != nil {
		return r, fmt.Errorf("seccomp: %w", err)
	}
	r.Seccomp, r.SeccompDigest = tierAProfile, prog.Digest()
	return r, nil
}
