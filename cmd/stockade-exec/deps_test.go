package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the executor small: it runs in every call's sandbox and must
// not carry an HTTP stack, the policy engine, a WASM compiler's host side it
// does not need, or NSS lookups.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	bad := map[string]string{
		"net/http":                         "the executor speaks only to its socket",
		"os/user":                          "no NSS lookups in the sandbox",
		"github.com/cedar-policy/cedar-go": "policy is the broker's job",
		"github.com/pelletier/go-toml/v2":  "configuration is the broker's job",
		"crypto/tls":                       "no network stack",
	}
	for _, d := range deps {
		if why, ok := bad[d]; ok {
			t.Errorf("stockade-exec depends on %s: %s", d, why)
		}
	}
	if len(deps) < 10 {
		t.Fatalf("go list returned too little: %v", deps)
	}
}
