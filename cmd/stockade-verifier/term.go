package main

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// echoOff turns off echo on the terminal fd (the caller prints the
// newline the user types) and returns a function that puts the previous
// settings back; it may be called more than once.
func echoOff(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }) }, nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}
