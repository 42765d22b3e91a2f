package verifier

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/stockade-dev/stockade/seccomp"
)

// Restrict confines the verifier once start-up is over: Landlock leaves it
// reading /proc (admins' ancestry) and reading and writing its state
// directory (the trust store and the installed skills), and nothing else
// (TCP is denied by the ruleset; archives arrive as descriptors, which
// Landlock does not check); the `verifier` seccomp allow-list kills it on
// any system call a verifier does not make — no socket but AF_UNIX, no
// process started. It returns what it enforced, for the log.
func Restrict(stateDir string) (string, error) {
	how := "no landlock (the host has none)"
	if abi, err := llsys.LandlockGetABIVersion(); err == nil && abi > 0 {
		abi = min(abi, 6)
		cfg := []landlock.Config{1: landlock.V1, 2: landlock.V2, 3: landlock.V3, 4: landlock.V4, 5: landlock.V5, 6: landlock.V6}[abi]
		if err := cfg.Restrict(landlock.RODirs("/proc"), landlock.RWDirs(stateDir)); err != nil {
			return "", fmt.Errorf("landlock: %w", err)
		}
		how = fmt.Sprintf("landlock v%d", abi)
	}
	digest, err := seccomp.InstallNamed("verifier")
	if err != nil {
		return "", err
	}
	return how + ", seccomp verifier " + digest, nil
}
