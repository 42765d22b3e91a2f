//go:build stockade_testhook

package main

// This file is compiled only into the binaries the integration tests build
// (-tags stockade_testhook): it attacks from inside the running verifier, to
// show that it can connect to nothing. It acts only when the test has put a
// file named "testhook" in the verifier's state directory (holding "unix
// PATH" or "tcp HOST:PORT"), once (it removes the file first), and only
// after the verifier has restricted itself. Its seccomp filter kills the
// verifier at the attempt: "survived" must never be printed.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func init() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	var state string
	for i, a := range os.Args {
		if a == "--state-dir" && i+1 < len(os.Args) {
			state = os.Args[i+1]
		}
	}
	trigger := filepath.Join(state, "testhook")
	b, err := os.ReadFile(trigger)
	if state == "" || err != nil {
		return
	}
	network, addr, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok {
		return
	}
	go func() {
		for range 3000 {
			st, _ := os.ReadFile("/proc/self/status")
			if strings.Contains(string(st), "Seccomp:\t2") {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		_, rerr := os.ReadDir(filepath.Join(filepath.Dir(state), "broker"))
		fmt.Fprintf(os.Stderr, "stockade-testhook verifier list-broker-state: %s\n", denied(rerr))
		werr := os.WriteFile(filepath.Join(filepath.Dir(state), "broker", "verifier-was-here"), []byte("x"), 0o600)
		fmt.Fprintf(os.Stderr, "stockade-testhook verifier write-broker-state: %s\n", denied(werr))
		err := os.Remove(trigger)
		fmt.Fprintf(os.Stderr, "stockade-testhook verifier attempt %s %s (trigger removed: %v)\n", network, addr, err)
		c, err := net.DialTimeout(network, addr, 2*time.Second)
		if c != nil {
			c.Close()
		}
		fmt.Fprintf(os.Stderr, "stockade-testhook verifier survived: %v\n", err)
	}()
}

func denied(err error) string {
	if err == nil {
		return "ok"
	}
	return "denied (" + err.Error() + ")"
}
