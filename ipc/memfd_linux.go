package ipc

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ModuleSeals are the seals on a sealed memfd: nobody can write, grow,
// shrink or unseal it any more, so its bytes, once checked, stay checked.
const ModuleSeals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL

// SealedMemfd returns a memfd holding data, sealed with ModuleSeals: how the
// verifier hands module bytes to the broker (resolve) and the broker hands
// an instrumented module to an executor (prepare, exec), without trusting
// any holder to leave them alone.
func SealedMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the memfd: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, ModuleSeals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the memfd: %w", err)
	}
	return f, nil
}

// CheckSealed checks that f is a sealed memfd (write, grow and shrink
// sealed) of exactly size bytes: its contents can no longer change.
func CheckSealed(f *os.File, size int64) error {
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("%w: not a sealed memfd: %v", ErrMalformed, err)
	}
	if need := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK; seals&need != need {
		return malformed("memfd seals %#x lack %#x", seals, need)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return malformed("memfd of %d bytes, want %d", fi.Size(), size)
	}
	return nil
}

// ReadSealed checks that f is a sealed memfd (CheckSealed) whose SHA-256
// is sum, and returns its bytes, read with pread from offset 0. A receiver
// calls it on every memfd a peer sends before it uses the bytes: a
// descriptor that is not sealed could change after the check.
func ReadSealed(f *os.File, size int64, sum [sha256.Size]byte) ([]byte, error) {
	if err := CheckSealed(f, size); err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, err
	}
	if sha256.Sum256(data) != sum {
		return nil, malformed("memfd contents do not hash to the digest sent with them")
	}
	return data, nil
}
