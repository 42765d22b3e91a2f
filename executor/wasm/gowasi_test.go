package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/wasm/meter"
)

// goModule is testdata/wasm/tiera/goecho, built with the Go toolchain as a
// WASI reactor, instrumented and compiled once per test binary.
var goModule struct {
	once sync.Once
	e    *Engine
	m    *Module
	wasm []byte // as built
	skip string
	err  error
}

// goEcho builds goecho (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) and
// compiles it in an Engine of its own; it skips the test when the
// toolchain cannot build it.
func goEcho(t testing.TB) (*Module, []byte) {
	t.Helper()
	goModule.once.Do(func() {
		dir, err := os.MkdirTemp("", "goecho")
		if err != nil {
			goModule.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "goecho.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = filepath.Join(fixtureDir, "goecho")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		start := time.Now()
		if msg, err := cmd.CombinedOutput(); err != nil {
			goModule.skip = "go build of goecho failed: " + err.Error() + "\n" + string(msg)
			return
		}
		built := time.Since(start)
		goModule.wasm, err = os.ReadFile(out)
		if err != nil {
			goModule.err = err
			return
		}
		start = time.Now()
		instrumented, info, err := meter.Instrument(goModule.wasm, meter.Config{})
		if err != nil {
			goModule.err = err
			return
		}
		instrumentTime := time.Since(start)
		ctx := context.Background()
		if goModule.e, err = NewEngine(ctx, EngineConfig{}); err != nil {
			goModule.err = err
			return
		}
		start = time.Now()
		goModule.m, goModule.err = goModule.e.Compile(ctx, instrumented)
		t.Logf("goecho: %d bytes; built in %v, instrumented in %v (%d -> %d bytes), compiled in %v",
			len(goModule.wasm), built.Round(time.Millisecond), instrumentTime.Round(time.Millisecond),
			info.InBytes, info.OutBytes, time.Since(start).Round(time.Millisecond))
	})
	if goModule.skip != "" {
		t.Skip(goModule.skip)
	}
	if goModule.err != nil {
		t.Fatal(goModule.err)
	}
	return goModule.m, goModule.wasm
}

// TestGoModule runs a tool written in ordinary Go end to end through the
// restricted WASI: _initialize, stockade_alloc, stdout, the stockade log,
// a sleep (poll_oneoff), the clock and crypto/rand.
func TestGoModule(t *testing.T) {
	m, _ := goEcho(t)
	input := `{"q":"héllo"}`
	lim := Limits{Fuel: 1 << 40}
	res, err := m.Run(t.Context(), "echo", []byte(input), lim, Grants{}, nil)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && res != nil {
			t.Logf("stderr: %s", res.Stderr)
		}
		t.Fatal(err)
	}
	var out struct {
		Echo    string `json:"echo"`
		Unix    int64  `json:"unix"`
		SleptNs int64  `json:"slept_ns"`
		Random  string `json:"random"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	if out.Echo != input {
		t.Errorf("echo %q", out.Echo)
	}
	if d := time.Since(time.Unix(out.Unix, 0)); d < 0 || d > time.Minute {
		t.Errorf("the guest's clock is off by %v", d)
	}
	if out.SleptNs < int64(time.Millisecond) {
		t.Errorf("slept %v", time.Duration(out.SleptNs))
	}
	if len(out.Random) != 32 || out.Random == strings.Repeat("0", 32) {
		t.Errorf("random %q", out.Random)
	}
	if want := "goecho: 14 bytes\n"; string(res.Stdout) != want {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
	if len(res.Logs) != 1 || res.Logs[0].Text != "goecho called" {
		t.Errorf("logs %+v", res.Logs)
	}
	t.Logf("fuel used %d (_initialize included), %d host calls", res.FuelUsed, res.HostCalls)

	// With the default budget too.
	if _, err := m.Run(t.Context(), "echo", []byte(input), Limits{}, Grants{}, nil); err != nil {
		t.Errorf("default limits: %v", err)
	}

	// A Go panic in a reactor prints to stderr and crashes (Go's runtime
	// crashes rather than exits in library modes): a trap "unreachable".
	res, err = m.Run(t.Context(), "crash", nil, lim, Grants{}, nil)
	if e := wantError(t, err, ClassTrap, ""); e.Trap != "unreachable" {
		t.Errorf("trap %q (%v); stderr %s", e.Trap, e.Err, res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "goecho: crash requested") {
		t.Errorf("stderr %q", res.Stderr)
	}
}

// TestGoModuleImports lists the wasip1 imports of the Go toolchain's
// reactor and checks the host provides each.
func TestGoModuleImports(t *testing.T) {
	_, wasmBytes := goEcho(t)
	ctx := context.Background()
	cm, err := goModule.e.rt.CompileModule(ctx, wasmBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close(ctx)
	provided := map[Import]bool{}
	for _, i := range Imports() {
		provided[i] = true
	}
	var names []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if !provided[Import{mod, name}] {
			t.Errorf("%s.%s is not provided", mod, name)
		}
		names = append(names, mod+"."+name)
	}
	t.Logf("imports: %s", strings.Join(names, " "))
}
