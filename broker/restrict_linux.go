package broker

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"

	"github.com/stockade-dev/stockade/seccomp"
)

// Restrict confines the broker once start-up is over (configuration read,
// bwrap probed, sockets inherited): Landlock limits it to writing its state
// directory and reading /proc (peers' ancestry) and the policy directory, and the `broker` seccomp
// allow-list kills it on any system call a broker does not make. Resolving
// paths (lstat, readlink) is not a Landlock right, so workspace and command
// checks keep working. It returns what it enforced, for the log.
func Restrict(stateDir, policyDir string) (string, error) {
	rules := []landlock.Rule{landlock.RWDirs(stateDir).WithRefer(), landlock.RODirs("/proc")}
	if policyDir != "" {
		rules = append(rules, landlock.RODirs(policyDir)) // reloaded on SIGHUP
	}
	if err := landlock.V6.Restrict(rules...); err != nil {
		return "", fmt.Errorf("landlock: %w", err)
	}
	digest, err := seccomp.InstallNamed("broker")
	if err != nil {
		return "", err
	}
	return "landlock v6, seccomp broker " + digest, nil
}
