package broker

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/stockade-dev/stockade/seccomp"
)

// Restrict confines the broker once start-up is over (configuration read,
// bwrap probed, sockets inherited): Landlock limits it to writing its state
// directory and reading /proc (peers' ancestry), the policy directory and
// what HTTP egress for skills needs (resolver files, TLS roots), and the `broker` seccomp
// allow-list kills it on any system call a broker does not make. Resolving
// paths (lstat, readlink) is not a Landlock right, so workspace and command
// checks keep working. It returns what it enforced, for the log.
//
// Landlock is applied at the host's ABI up to 6; a host without Landlock
// gets seccomp alone, and the returned description says so.
//
// wasmCache, when set, is writable too: the compiled-code cache of Tier A.
func Restrict(stateDir, policyDir, wasmCache string) (string, error) {
	abi := min(hostLandlockABI(), 6)
	how := "no landlock (the host has none)"
	if abi > 0 {
		state := landlock.RWDirs(stateDir)
		if abi >= 2 {
			state = state.WithRefer() // the attestation log renames across its directory
		}
		rules := []landlock.Rule{state, landlock.RODirs("/proc")}
		if policyDir != "" {
			rules = append(rules, landlock.RODirs(policyDir)) // reloaded on SIGHUP
		}
		if wasmCache != "" {
			rules = append(rules, landlock.RWDirs(wasmCache))
		}
		// Tier A's HTTP grants are performed here: name resolution and
		// TLS roots are read, and TCP is not restricted by Landlock (the
		// grants are checked per request, and the seccomp profile allows
		// only inet, inet6 and unix sockets).
		rules = append(rules,
			landlock.ROFiles("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf").IgnoreIfMissing(),
			landlock.RODirs("/etc/ssl", "/etc/pki", "/usr/share/ca-certificates").IgnoreIfMissing())
		cfg := landlockConfigs[abi]
		if err := cfg.RestrictPaths(rules...); err != nil {
			return "", fmt.Errorf("landlock: %w", err)
		}
		if abi >= 6 {
			if err := cfg.RestrictScoped(); err != nil {
				return "", fmt.Errorf("landlock scopes: %w", err)
			}
		}
		how = fmt.Sprintf("landlock v%d", abi)
	}
	digest, err := seccomp.InstallNamed("broker")
	if err != nil {
		return "", err
	}
	return how + ", seccomp broker " + digest, nil
}

var landlockConfigs = []landlock.Config{
	1: landlock.V1, 2: landlock.V2, 3: landlock.V3, 4: landlock.V4, 5: landlock.V5, 6: landlock.V6,
}

func hostLandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}
