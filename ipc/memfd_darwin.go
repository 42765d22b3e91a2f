package ipc

import (
	"crypto/sha256"
	"errors"
	"os"
)

var errNoMemfd = errors.New("sealed memfds are Linux's; macOS has none")

// SealedMemfd is not available on macOS.
func SealedMemfd(name string, data []byte) (*os.File, error) { return nil, errNoMemfd }

// ReadSealed is not available on macOS.
func ReadSealed(f *os.File, size int64, sum [sha256.Size]byte) ([]byte, error) {
	return nil, errNoMemfd
}

// CheckSealed is not available on macOS.
func CheckSealed(f *os.File, size int64) error { return errNoMemfd }
