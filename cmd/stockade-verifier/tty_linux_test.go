package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal's master and its slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestPassphraseFromTerminal runs keygen on a pseudo-terminal (its
// controlling terminal, so /dev/tty is the pty): it must prompt, read the
// passphrase twice with echo off (the passphrase never comes back on the
// master), restore echo, and write a key that opens with that passphrase.
// A mismatched repeat is refused.
func TestPassphraseFromTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		first, repeat string
		wantCode      outcome
	}{
		{"same", "tty s3cret", "tty s3cret", outOK},
		{"differ", "tty s3cret", "tty secret", outUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorkspace(t)
			m, s := openPTY(t)
			defer m.Close()
			cmd := exec.Command(verifierBinary(t), "keygen", "--out", "tty.key")
			cmd.Dir = w.dir
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			s.Close()
			var seen bytes.Buffer
			expect := func(prompt string) {
				t.Helper()
				buf := make([]byte, 256)
				for !strings.Contains(seen.String(), prompt) {
					n, err := m.Read(buf)
					seen.Write(buf[:n])
					if err != nil {
						t.Fatalf("waiting for %q: %v; saw %q", prompt, err, seen.String())
					}
				}
			}
			expect("Passphrase for the new key: ")
			io.WriteString(m, tc.first+"\n")
			expect("Repeat the passphrase: ")
			io.WriteString(m, tc.repeat+"\n")
			// Read the rest until the child closes the terminal.
			rest, _ := io.ReadAll(readerUntilEIO{m})
			seen.Write(rest)
			err := cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(seen.String(), tc.first) || strings.Contains(seen.String(), tc.repeat) {
				t.Errorf("the passphrase was echoed: %q", seen.String())
			}
			if outcome(code) != tc.wantCode {
				t.Fatalf("exit %d; want %d; terminal: %q", code, tc.wantCode, seen.String())
			}
			if tc.wantCode != outOK {
				if !strings.Contains(seen.String(), "the passphrases differ") {
					t.Errorf("terminal: %q", seen.String())
				}
				if _, err := os.Stat(w.path("tty.key")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a key file was written")
				}
				return
			}
			kf, err := readKeyFile(w.path("tty.key"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kf.open([]byte(tc.first)); err != nil {
				t.Errorf("the key does not open with the passphrase typed: %v", err)
			}
		})
	}
}

// readerUntilEIO reads a pty master until the slave side is gone (EIO).
type readerUntilEIO struct{ f *os.File }

func (r readerUntilEIO) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && errors.Is(err, syscall.EIO) {
		return n, io.EOF
	}
	return n, err
}
