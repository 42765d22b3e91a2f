package executor

import (
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/stockade-dev/stockade/ipc"
)

// maxLandlockABI is the highest Landlock ABI whose semantics we have vetted:
// 4 adds TCP bind/connect rights, 6 signal and abstract-socket scoping, 7
// audit flags only.
const maxLandlockABI = 7

// LandlockABI is the host's Landlock ABI, 0 when Landlock is absent or off.
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

var landlockConfigs = []landlock.Config{
	1: landlock.V1, 2: landlock.V2, 3: landlock.V3, 4: landlock.V4,
	5: landlock.V5, 6: landlock.V6, 7: landlock.V7,
}

// applyLandlock confines this process (every thread, so that whichever one
// execs the target carries the domain) to the spec's paths. Without egress, TCP
// bind and connect are denied (ABI 4+). Signals and abstract Unix sockets are
// scoped to the domain (ABI 6+): the target cannot signal the broker or reach
// an abstract socket served outside. It never degrades silently: a host below
// the spec's minimum ABI is an error, and the ABI enforced is returned.
func applyLandlock(sb *ipc.SandboxSpec, egress bool) (int, error) {
	host := LandlockABI()
	if host < sb.MinLandlockABI || host == 0 {
		return 0, ipc.Errorf(ipc.ClassSandboxUnavailable, "Landlock ABI %d here, the call needs %d", host, max(sb.MinLandlockABI, 1))
	}
	abi := min(host, maxLandlockABI)
	cfg := landlockConfigs[abi]
	rules, err := pathRules(sb.ReadOnly, sb.ReadWrite, abi >= 2)
	if err != nil {
		return 0, err
	}
	if !egress {
		// Restrict handles every right the ABI knows: files, TCP (no port
		// rule: all denied) and scopes.
		err = cfg.Restrict(rules...)
	} else {
		err = cfg.RestrictPaths(rules...)
		if err == nil && abi >= 6 {
			err = cfg.RestrictScoped()
		}
	}
	if err != nil {
		return 0, ipc.Errorf(ipc.ClassSandboxUnavailable, "Landlock: %v", err)
	}
	return abi, nil
}

// pathRules turns path lists into Landlock rules, directories and files
// apart. A missing path is an error: the broker resolved them.
// With refer (ABI 2+), files may move between directories of the writable
// trees (mv a/x b/x); without it Landlock refuses every such rename.
func pathRules(ro, rw []string, refer bool) ([]landlock.Rule, error) {
	var roDirs, roFiles, rwDirs, rwFiles []string
	for _, set := range []struct {
		paths       []string
		dirs, files *[]string
	}{{ro, &roDirs, &roFiles}, {rw, &rwDirs, &rwFiles}} {
		for _, p := range set.paths {
			fi, err := os.Stat(p)
			if err != nil {
				return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox path %s: %v", p, err)
			}
			if fi.IsDir() {
				*set.dirs = append(*set.dirs, p)
			} else {
				*set.files = append(*set.files, p)
			}
		}
	}
	rwd := landlock.RWDirs(rwDirs...)
	if refer {
		rwd = rwd.WithRefer()
	}
	return []landlock.Rule{
		landlock.RODirs(roDirs...), landlock.ROFiles(roFiles...),
		rwd, landlock.RWFiles(rwFiles...),
	}, nil
}
