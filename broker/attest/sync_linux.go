package attest

import (
	"os"
	"syscall"
)

// syncData makes an appended record durable: fdatasync flushes the data and
// the file's new size (what reading it back needs), not its timestamps.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
