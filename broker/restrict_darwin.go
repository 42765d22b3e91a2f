package broker

import "errors"

// Restrict is not available on macOS yet.
func Restrict(stateDir, policyDir, wasmCache string) (string, error) {
	return "", errors.New("daemon self-restriction is not implemented on macOS")
}
