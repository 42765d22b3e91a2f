//go:build !linux

package executor

import (
	"errors"

	"github.com/stockade-dev/stockade/ipc"
)

// confineSelf: Tier A needs Linux (Landlock and seccomp for the executor).
func confineSelf(string) (ipc.Receipt, error) {
	return ipc.Receipt{}, errors.New("Tier A is supported on Linux only")
}
