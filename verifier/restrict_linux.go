package verifier

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"

	"github.com/stockade-dev/stockade/seccomp"
)

// Restrict confines the verifier once start-up is over: Landlock leaves it
// reading /proc (admins' ancestry) and nothing else (it keeps no files yet;
// TCP is denied by the ruleset), and the `verifier` seccomp allow-list kills
// it on any system call a verifier does not make — no socket but AF_UNIX, no
// process started. It returns what it enforced, for the log.
func Restrict() (string, error) {
	if err := landlock.V6.Restrict(landlock.RODirs("/proc")); err != nil {
		return "", fmt.Errorf("landlock: %w", err)
	}
	digest, err := seccomp.InstallNamed("verifier")
	if err != nil {
		return "", err
	}
	return "landlock v6, seccomp verifier " + digest, nil
}
