package meter

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// fixtureDir holds the .wat fixtures and the .wasm generated from them.
const fixtureDir = "../../testdata/wasm"

// memoryLimitPages is the executor's cap, 64 MiB.
const memoryLimitPages = 1024

// hugeBudget never runs out in a test.
const hugeBudget = 1 << 50

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type engine struct {
	name   string
	config func() wazero.RuntimeConfig
}

var engines = []engine{
	{"compiler", wazero.NewRuntimeConfigCompiler},
	{"interpreter", wazero.NewRuntimeConfigInterpreter},
}

// newRuntime returns a runtime configured as the executor's, with the
// stockade_meter host module and the "env" fixture instantiated.
func newRuntime(t testing.TB, e engine) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, e.config().
		WithCoreFeatures(Features).
		WithMemoryLimitPages(memoryLimitPages).
		WithCloseOnContextDone(false))
	t.Cleanup(func() { rt.Close(ctx) })
	if err := NewHostModule(ctx, rt); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.InstantiateWithConfig(ctx, fixture(t, "env"), wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	return rt
}

// mustInstrument instruments with the default Config.
func mustInstrument(t testing.TB, module []byte) []byte {
	t.Helper()
	out, _, err := Instrument(module, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// instance is one instantiation of a module, metered or not.
type instance struct {
	mod   api.Module
	meter *Meter // nil when unmetered
	ctx   context.Context
}

// instantiate compiles and instantiates module. With a non-nil meter the
// module must be instrumented; the meter is put in the context and bound.
func instantiate(t testing.TB, rt wazero.Runtime, module []byte, m *Meter) (*instance, error) {
	t.Helper()
	ctx := context.Background()
	if m != nil {
		ctx = WithMeter(ctx, m)
	}
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	t.Cleanup(func() { cm.Close(context.Background()) })
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	if m != nil {
		if err := m.Bind(mod); err != nil {
			t.Fatal(err)
		}
	}
	return &instance{mod: mod, meter: m, ctx: ctx}, nil
}

func mustInstantiate(t testing.TB, rt wazero.Runtime, module []byte, m *Meter) *instance {
	t.Helper()
	in, err := instantiate(t, rt, module, m)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	return in
}

// call runs an export as a top-level call.
func (in *instance) call(t testing.TB, name string, args ...uint64) ([]uint64, error) {
	t.Helper()
	f := in.mod.ExportedFunction(name)
	if f == nil {
		t.Fatalf("no export %q", name)
	}
	if in.meter != nil {
		if err := in.meter.Begin(); err != nil {
			t.Fatal(err)
		}
	}
	return f.Call(in.ctx, args...)
}
