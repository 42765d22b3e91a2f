//go:build !linux

package privdrop

import "errors"

// Drop is Linux-only: multi-uid mode needs Linux.
func Drop(id Identity, keep int) error {
	return errors.New("privdrop: multi-uid mode is supported on Linux only")
}

// Check is Linux-only: multi-uid mode needs Linux.
func Check() error {
	return errors.New("privdrop: multi-uid mode is supported on Linux only")
}

// Harden does nothing here.
func Harden() error { return nil }
