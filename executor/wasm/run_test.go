package wasm

import (
	"bytes"
	"context"
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

// TestFixturesUpToDate checks that every committed .wasm in
// testdata/wasm/tiera is what wat2wasm makes of the .wat beside it. It
// skips when wat2wasm (Debian package wabt) is not on PATH. To regenerate
// after editing a .wat:
//
//	cd testdata/wasm/tiera && for f in *.wat; do wat2wasm $f -o ${f%.wat}.wasm; done
func TestFixturesUpToDate(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm not on PATH (apt-get install wabt)")
	}
	sources, err := filepath.Glob(filepath.Join(fixtureDir, "*.wat"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	tmp := t.TempDir()
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".wat")
		out := filepath.Join(tmp, name+".wasm")
		if msg, err := exec.Command(wat2wasm, src, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", src, err, msg)
		}
		if !bytes.Equal(readFixture(t, out), fixture(t, name)) {
			t.Errorf("%s.wasm is stale; regenerate it (see the test's doc comment)", name)
		}
	}
}

func TestEcho(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["echo"]
	input := []byte(`{"hello":"world"}`)
	res, err := m.Run(t.Context(), "echo", input, Limits{}, Grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Output, input) {
		t.Errorf("output %q, want %q", res.Output, input)
	}
	if res.FuelUsed == 0 || res.HostCalls != 0 {
		t.Errorf("fuel %d, host calls %d", res.FuelUsed, res.HostCalls)
	}
	// A large input makes stockade_alloc grow memory.
	big := bytes.Repeat([]byte("x"), 300<<10)
	res, err = m.Run(t.Context(), "echo", big, Limits{}, Grants{}, nil)
	if err != nil || !bytes.Equal(res.Output, big) {
		t.Fatalf("300 KiB echo: %v", err)
	}
}

// TestLimits runs the attacks of limits.wat and checks each ends as it
// must. Latencies of the timed cases are logged; the only timed assertion
// is a generous bound.
func TestLimits(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["limits"]
	cases := []struct {
		name     string
		export   string
		input    []byte
		lim      Limits
		class    Class
		resource Resource
		trap     string
	}{
		{"loop, fuel", "spin", nil, Limits{Fuel: 1_000_000}, ClassQuotaExceeded, ResourceFuel, ""},
		{"loop, deadline", "spin", nil, Limits{Fuel: hugeFuel, Timeout: 50 * time.Millisecond}, ClassTimedOut, "", ""},
		{"loop-free recursion, fuel", "fib", []byte{40}, Limits{}, ClassQuotaExceeded, ResourceFuel, ""},
		{"loop-free recursion, deadline", "fib", []byte{60}, Limits{Fuel: hugeFuel, Timeout: 50 * time.Millisecond}, ClassTimedOut, "", ""},
		{"unbounded recursion", "recurse", nil, Limits{Fuel: hugeFuel}, ClassQuotaExceeded, ResourceDepth, ""},
		{"grow past the limit, then trap", "grow_trap", nil, Limits{MemoryPages: 64}, ClassQuotaExceeded, ResourceMemory, "unreachable"},
		{"memory.fill 64 MiB in a loop", "fill", nil, Limits{}, ClassQuotaExceeded, ResourceFuel, ""},
		{"memory.copy 64 MiB in a loop", "copy", nil, Limits{}, ClassQuotaExceeded, ResourceFuel, ""},
		{"unreachable", "trap", nil, Limits{}, ClassTrap, "", "unreachable"},
		{"out of bounds", "oob", nil, Limits{}, ClassTrap, "", "out_of_bounds_memory_access"},
		{"divide by zero", "div0", nil, Limits{}, ClassTrap, "", "integer_divide_by_zero"},
		{"output outside memory", "output_oob", nil, Limits{}, ClassFailed, "", ""},
		{"output over quota", "output_page", nil, Limits{MaxOutput: 1000}, ClassQuotaExceeded, ResourceOutput, ""},
		{"fill under a memory limit", "fill", nil, Limits{MemoryPages: 512}, ClassQuotaExceeded, ResourceMemory, "unreachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := m.Run(t.Context(), tc.export, tc.input, tc.lim, Grants{}, nil)
			elapsed := time.Since(start)
			e := wantError(t, err, tc.class, tc.resource)
			if e.Trap != tc.trap {
				t.Errorf("trap %q, want %q", e.Trap, tc.trap)
			}
			if res == nil || e.FuelUsed != res.FuelUsed || e.FuelUsed == 0 {
				t.Errorf("fuel used %d in the error, result %+v", e.FuelUsed, res)
			}
			if tc.resource == ResourceFuel && e.FuelUsed <= tc.lim.withDefaults().Fuel {
				t.Errorf("fuel used %d, within the budget", e.FuelUsed)
			}
			t.Logf("%s after %v, fuel %d: %v", e.Class, elapsed, e.FuelUsed, e)
			if elapsed > 10*time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}

// TestMemoryGrowRefused: memory.grow past the limit returns -1 to a guest
// that handles it; the call succeeds at the size reached.
func TestMemoryGrowRefused(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["limits"]
	for _, pages := range []uint32{64, 1024} {
		res, err := m.Run(t.Context(), "grow_handled", nil, Limits{MemoryPages: pages}, Grants{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// 1 page, then 16 at a time while they fit.
		want := 1 + (pages-1)/16*16
		if got := le32(res.Output); got != want {
			t.Errorf("limit %d pages: grew to %d, want %d", pages, got, want)
		}
	}
}

// TestFuelDeterministic: the same module and input use the same fuel,
// whether the call succeeds or runs out.
func TestFuelDeterministic(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["limits"]
	for _, tc := range []struct {
		export string
		input  []byte
		lim    Limits
	}{
		{"fib", []byte{20}, Limits{}},
		{"fib", []byte{35}, Limits{Fuel: 3_000_000}},
		{"spin", nil, Limits{Fuel: 2_500_000}},
	} {
		var first uint64
		for i := range 100 {
			res, err := m.Run(t.Context(), tc.export, tc.input, tc.lim, Grants{}, nil)
			var used uint64
			if err != nil {
				used = wantError(t, err, ClassQuotaExceeded, ResourceFuel).FuelUsed
			} else {
				used = res.FuelUsed
			}
			if i == 0 {
				first = used
				t.Logf("%s(%v): fuel %d (err %v)", tc.export, tc.input, used, err)
			} else if used != first {
				t.Fatalf("%s run %d used %d fuel, run 0 used %d", tc.export, i, used, first)
			}
		}
	}
}

// TestMemoryNotShared: a call's memory starts zeroed, whatever the call
// before it (in the same pooled region) left there.
func TestMemoryNotShared(t *testing.T) {
	m := fixtures(t)["limits"]
	for range 3 {
		if _, err := m.Run(t.Context(), "fib", []byte{10}, Limits{}, Grants{}, nil); err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(t.Context(), "output_page", nil, Limits{}, Grants{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.Output, make([]byte, pageSize)) {
			t.Fatal("the first page of a fresh instance is not zero")
		}
	}
}

func TestRunRefuses(t *testing.T) {
	t.Parallel()
	mods := fixtures(t)
	for _, export := range []string{"missing", ExportAlloc, ExportInitialize, meter.UsedExport, "memory"} {
		_, err := mods["echo"].Run(t.Context(), export, nil, Limits{}, Grants{}, nil)
		wantError(t, err, ClassInvalidInput, "")
	}
	// host.wat declares 3 pages.
	_, err := mods["host"].Run(t.Context(), "abi", nil, Limits{MemoryPages: 2}, Grants{}, nil)
	wantError(t, err, ClassQuotaExceeded, ResourceMemory)
}

// TestCompileRefuses: modules that are not instrumented, import what the
// host does not provide, or lack the ABI's exports.
func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	e := fixtures(t)["echo"].e
	instrument := func(b []byte) []byte {
		out, _, err := meter.Instrument(b, meter.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, module := range map[string][]byte{
		"not instrumented":    fixture(t, "echo"),
		"imports env":         instrument(readFixture(t, fixtureDir+"/../imports.wasm")),
		"no stockade_alloc":   instrument(readFixture(t, fixtureDir+"/../memory.wasm")),
		"not a module":        []byte("\x00asm\x01\x00\x00\x00\xff"),
		"memory not exported": instrument(readFixture(t, fixtureDir+"/../bench_loop.wasm")),
	} {
		if _, err := e.Compile(t.Context(), module); !errors.Is(err, ErrInvalidModule) {
			t.Errorf("%s: %v, want ErrInvalidModule", name, err)
		}
	}
}

// TestInstanceSlots: a module's instances are capped; a call that cannot
// get a slot before its deadline times out.
func TestInstanceSlots(t *testing.T) {
	t.Parallel()
	e := newEngine(t, EngineConfig{MaxInstancesPerModule: 1})
	m := compile(t, e, fixture(t, "limits"))
	done := make(chan error)
	go func() {
		_, err := m.Run(context.Background(), "spin", nil, Limits{Fuel: hugeFuel, Timeout: 500 * time.Millisecond}, Grants{}, nil)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	_, err := m.Run(t.Context(), "spin", nil, Limits{Timeout: 50 * time.Millisecond}, Grants{}, nil)
	e2 := wantError(t, err, ClassTimedOut, "")
	if !strings.Contains(e2.Message, "slot") {
		t.Errorf("%v: not waiting for a slot", e2)
	}
	wantError(t, <-done, ClassTimedOut, "")
}

// TestConcurrentWatchdogs: more spinning guests than CPUs all stop at
// their deadlines.
func TestConcurrentWatchdogs(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["limits"]
	var wg sync.WaitGroup
	start := time.Now()
	stopped := make([]time.Duration, 8)
	for i := range stopped {
		wg.Go(func() {
			_, err := m.Run(t.Context(), "spin", nil, Limits{Fuel: hugeFuel, Timeout: 100 * time.Millisecond}, Grants{}, nil)
			stopped[i] = time.Since(start)
			wantError(t, err, ClassTimedOut, "")
		})
	}
	wg.Wait()
	t.Logf("8 guests with 100 ms deadlines stopped after %v", stopped)
}

// TestCanceled: canceling the call's context stops the guest as failed.
func TestCanceled(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["limits"]
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := m.Run(ctx, "spin", nil, Limits{Fuel: hugeFuel}, Grants{}, nil)
	wantError(t, err, ClassFailed, "")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		shared.e.Close(context.Background())
	}
	os.Exit(code)
}
