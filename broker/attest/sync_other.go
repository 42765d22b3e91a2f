//go:build !linux

package attest

import "os"

// syncData makes an appended record durable.
func syncData(f *os.File) error { return f.Sync() }
