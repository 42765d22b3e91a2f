package meter

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// realModules are modules built by real toolchains (TinyGo, Rust, Zig)
// that ship in the wazero module's test data, read in place.
var realModules = []string{
	"examples/basic/testdata/add.wasm",                             // TinyGo
	"examples/allocation/tinygo/testdata/greet.wasm",               // TinyGo, 370 KB
	"examples/cli/testdata/cli.wasm",                               // TinyGo
	"imports/wasi_snapshot_preview1/testdata/cargo-wasi/wasi.wasm", // Rust
	"imports/wasi_snapshot_preview1/testdata/zig-cc/wasi.wasm",     // Zig, 786 KB with DWARF
	"imports/wasi_snapshot_preview1/example/testdata/cargo-wasi/cat.wasm",
}

func readRealModule(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wazeroDir(t), rel))
	if err != nil {
		t.Skipf("not in the module cache: %v", err)
	}
	return b
}

// TestRealModules instruments compiler output and compiles the result in
// the compiler; add.wasm's export runs plain and metered alike.
func TestRealModules(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, engines[0])
	wasi_snapshot_preview1.MustInstantiate(t.Context(), rt)
	for _, rel := range realModules {
		t.Run(filepath.Base(filepath.Dir(rel))+"/"+filepath.Base(rel), func(t *testing.T) {
			module := readRealModule(t, rel)
			out, info, err := Instrument(module, Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d functions, %d blocks, %d tracked, %d dynamic; %d custom sections dropped; %d -> %d bytes",
				info.Functions, info.Blocks, info.Tracked, info.Dynamic, info.Dropped, info.InBytes, info.OutBytes)
			cm, err := rt.CompileModule(t.Context(), out)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			defer cm.Close(t.Context())
			orig, err := rt.CompileModule(t.Context(), module)
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close(t.Context())
			want := slices.Sorted(mapsKeys(orig.ExportedFunctions()))
			if got := slices.Sorted(mapsKeys(cm.ExportedFunctions())); !slices.Equal(got, want) {
				t.Errorf("exported functions %v, want %v", got, want)
			}
		})
	}
	t.Run("add", func(t *testing.T) {
		// A TinyGo reactor: _initialize runs as the start function, metered
		// through the context before Bind.
		module := readRealModule(t, realModules[0])
		cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
		var results [2][]uint64
		m := NewMeter(hugeBudget)
		for i, b := range [][]byte{module, mustInstrument(t, module)} {
			ctx := t.Context()
			if i == 1 {
				ctx = WithMeter(ctx, m)
			}
			mod, err := rt.InstantiateWithConfig(ctx, b, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(ctx)
			if i == 1 {
				if err := m.Bind(mod); err != nil {
					t.Fatal(err)
				}
				if err := m.Begin(); err != nil {
					t.Fatal(err)
				}
			}
			if results[i], err = mod.ExportedFunction("add").Call(ctx, 40, 2); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(results[0], results[1]) || results[0][0] != 42 {
			t.Errorf("add(40, 2) = %v metered, %v plain", results[1], results[0])
		}
		t.Logf("fuel, _initialize included: %d", m.Used())
	})
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
