//go:build stockade_testhook

package main

// This file is compiled only into the binaries the integration tests build
// (-tags stockade_testhook): it attacks from inside the running broker, to
// show what its uid, Landlock and seccomp deny it. It acts only when the
// test has put a file named "testhook" in the broker's state directory:
// once at start (init, before the broker's main has confined anything, so
// only the broker's uid stands in the way), then again after the broker
// has restricted itself.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func init() {
	state := flagValue("--state-dir")
	if state == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(state, "testhook")); err != nil {
		return
	}
	verifierState := filepath.Join(filepath.Dir(state), "verifier")
	err := os.WriteFile(filepath.Join(verifierState, "broker-was-here-unconfined"), []byte("x"), 0o600)
	fmt.Fprintf(os.Stderr, "stockade-testhook broker write-verifier-state-unconfined: %v\n", errText(err))
	go func() {
		if !waitRestricted() {
			fmt.Fprintln(os.Stderr, "stockade-testhook broker: never restricted")
			return
		}
		err := os.WriteFile(filepath.Join(verifierState, "broker-was-here"), []byte("x"), 0o600)
		fmt.Fprintf(os.Stderr, "stockade-testhook broker write-verifier-state: %v\n", errText(err))
		_, err = os.ReadDir(verifierState)
		fmt.Fprintf(os.Stderr, "stockade-testhook broker list-verifier-state: %v\n", errText(err))
		err = os.WriteFile(filepath.Join(state, "testhook-done"), []byte("x"), 0o600)
		fmt.Fprintf(os.Stderr, "stockade-testhook broker write-own-state: %v\n", errText(err))
	}()
}

func flagValue(name string) string {
	for i, a := range os.Args {
		if a == name && i+1 < len(os.Args) {
			return os.Args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// waitRestricted waits until the process runs under a seccomp filter, which
// the broker installs last.
func waitRestricted() bool {
	for range 3000 {
		b, _ := os.ReadFile("/proc/self/status")
		if strings.Contains(string(b), "Seccomp:\t2") {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "denied (" + err.Error() + ")"
}
