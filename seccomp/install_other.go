//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
)

// Install fails: seccomp is Linux only. Programs can still be compiled,
// disassembled and evaluated on any host.
func Install(p *Program) error {
	return fmt.Errorf("%w: %w", ErrInstall, errors.ErrUnsupported)
}
