//go:build !wasip1

package sdk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// moduleRoot is the repository root, relative to this package.
const moduleRoot = ".."

var errNoGo = errors.New("no go command to build skills with")

// buildSkill builds the package main at pkg (relative to the repository
// root) into a module at out, exactly as sdk.mk does: go build, then the
// post-link step sdk/cmd/wasm-table-max, which bounds the function table.
func buildSkill(pkg, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: %v", errNoGo, err)
	}
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-ldflags=-s", "-o", out, pkg)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	// For the host, as make runs it (the Makefile exports CGO_ENABLED=0).
	cmd = exec.Command(goBin, "run", "./sdk/cmd/wasm-table-max", "-o", out, out)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("wasm-table-max %s: %v\n%s", out, err, b)
	}
	return nil
}

// mustBuild is buildSkill in a test: skipped without a go command.
func mustBuild(t testing.TB, pkg, out string) {
	t.Helper()
	if err := buildSkill(pkg, out); errors.Is(err, errNoGo) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// probe builds sdk/testdata/probe once per test binary and returns its
// module.
var probe = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sdk-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "probe.wasm")
	if err := buildSkill("./sdk/testdata/probe", out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
})

func probeModule(t testing.TB) []byte {
	t.Helper()
	b, err := probe()
	if errors.Is(err, errNoGo) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	return b
}
