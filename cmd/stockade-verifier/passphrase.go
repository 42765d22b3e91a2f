package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// passphraseEnv names the environment variable that holds a key file's
// passphrase for scripts. When it is unset, the passphrase is read from the
// controlling terminal (/dev/tty) with echo off; with neither, commands that
// need one fail rather than read it from stdin, where it could be piped by
// mistake.
const passphraseEnv = "STOCKADE_KEY_PASSPHRASE"

var (
	errNoTerminal        = errors.New("no passphrase: set " + passphraseEnv + " or run on a terminal (or use --unencrypted)")
	errPassphrasesDiffer = errors.New("the passphrases differ")
)

// passphrase returns the passphrase for a key file. confirm asks twice on
// the terminal (for a new key).
func (c *cli) passphrase(prompt string, confirm bool) ([]byte, error) {
	if v, ok := c.lookupEnv(passphraseEnv); ok {
		if v == "" {
			return nil, fmt.Errorf("%s is set but empty", passphraseEnv)
		}
		if len(v) > maxPassphraseSize {
			return nil, fmt.Errorf("%s is longer than %d bytes", passphraseEnv, maxPassphraseSize)
		}
		return []byte(v), nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, errNoTerminal
	}
	defer tty.Close()
	p, err := readHidden(tty, prompt)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, errNoPassphrase
	}
	if confirm {
		again, err := readHidden(tty, "Repeat the passphrase: ")
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(p, again) {
			return nil, errPassphrasesDiffer
		}
	}
	return p, nil
}

// readHidden prints prompt on tty and reads one line with echo off,
// restoring the terminal afterwards, also when interrupted.
func readHidden(tty *os.File, prompt string) ([]byte, error) {
	fd := int(tty.Fd())
	restore, err := echoOff(fd)
	if err != nil {
		return nil, fmt.Errorf("turning terminal echo off: %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	defer func() {
		signal.Stop(sig)
		close(done)
		restore()
	}()
	go func() {
		select {
		case s := <-sig:
			restore()
			fmt.Fprintln(tty)
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	fmt.Fprint(tty, prompt)
	line, err := bufio.NewReaderSize(tty, maxPassphraseSize+2).ReadSlice('\n')
	fmt.Fprintln(tty)
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("passphrase longer than %d bytes", maxPassphraseSize)
		}
		return nil, fmt.Errorf("reading the passphrase: %w", err)
	}
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	return bytes.Clone(line), nil
}
