package wasm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stockade-dev/stockade/wasm/compiled"
	"github.com/stockade-dev/stockade/wasm/meter"
)

// EngineConfig tunes an Engine. The zero value is the default.
type EngineConfig struct {
	// MaxInstances bounds the instances alive at once in the Engine; Run
	// waits for a slot (until its deadline). 0 means 256.
	MaxInstances int
	// MaxInstancesPerModule bounds the instances of one Module (one skill
	// module) alive at once. 0 means 8.
	MaxInstancesPerModule int
	// CacheDir is the broker's compiled-code cache (wasm/compiled), read
	// to skip compiling; "" compiles here.
	CacheDir string
}

const (
	defaultMaxInstances          = 256
	defaultMaxInstancesPerModule = 8
)

// Engine runs Tier A modules: one wazero runtime (the compiler where the
// platform has one) with the host modules "stockade", "stockade_meter" and
// the restricted "wasi_snapshot_preview1" instantiated in it, a pool of
// linear memories, and a semaphore on live instances. Its methods are safe
// for concurrent use.
type Engine struct {
	rt    wazero.Runtime
	pool  *memoryPool
	slots chan struct{}
	cfg   EngineConfig
	epoch time.Time // the base of the guest's monotonic clock
}

// NewEngine returns an Engine. Close it to release the runtime.
func NewEngine(ctx context.Context, cfg EngineConfig) (*Engine, error) {
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = defaultMaxInstances
	}
	if cfg.MaxInstancesPerModule <= 0 {
		cfg.MaxInstancesPerModule = defaultMaxInstancesPerModule
	}
	rc := compiled.RuntimeConfig()
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = compiled.Open(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("wasm: compiled-code cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	e := &Engine{
		rt:    rt,
		pool:  newMemoryPool(),
		slots: make(chan struct{}, cfg.MaxInstances),
		cfg:   cfg,
		epoch: time.Now(),
	}
	if err := e.instantiateHostModules(ctx); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (e *Engine) instantiateHostModules(ctx context.Context) error {
	if err := meter.NewHostModule(ctx, e.rt); err != nil {
		return err
	}
	for _, hm := range []struct {
		name  string
		funcs []hostFunc
	}{
		{HostModule, stockadeFuncs},
		{wasiModule, wasiFuncs},
	} {
		b := e.rt.NewHostModuleBuilder(hm.name)
		for _, f := range hm.funcs {
			b.NewFunctionBuilder().
				WithGoModuleFunction(f.fn, f.params, f.results).
				WithName(f.name).
				Export(f.name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			return fmt.Errorf("wasm: instantiating the %s host module: %w", hm.name, err)
		}
	}
	return nil
}

// Close releases the runtime and everything compiled in it. Calls still
// running fail.
func (e *Engine) Close(ctx context.Context) error {
	err := e.rt.Close(ctx)
	e.pool.close()
	return err
}

// Module is a compiled Tier A module, ready to run calls. Its methods are
// safe for concurrent use; each call runs in its own instance.
type Module struct {
	e       *Engine
	cm      wazero.CompiledModule
	exports map[string]api.FunctionDefinition
	memMin  uint32 // pages
	memMax  uint32 // pages, the declared maximum (or wazero's ceiling)
	init    bool   // exports _initialize
	slots   chan struct{}
}

// Compile compiles a module as wasm/meter.Instrument produced it (from a
// module the verifier accepted). It refuses, wrapping ErrInvalidModule, a
// module that does not look instrumented, imports anything but this
// package's host functions, or lacks the ABI's exports.
func (e *Engine) Compile(ctx context.Context, instrumented []byte) (*Module, error) {
	cm, err := e.rt.CompileModule(ctx, instrumented)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	m, err := e.check(cm)
	if err != nil {
		cm.Close(ctx)
		return nil, err
	}
	return m, nil
}

// signatures of the host functions, by module and name, including the
// meter's.
var signatures = func() map[Import]hostFunc {
	s := make(map[Import]hostFunc)
	for _, f := range stockadeFuncs {
		s[Import{HostModule, f.name}] = f
	}
	for _, f := range wasiFuncs {
		s[Import{wasiModule, f.name}] = f
	}
	s[Import{meter.HostModuleName, meter.RefillName}] = hostFunc{name: meter.RefillName}
	s[Import{meter.HostModuleName, meter.DepthExceededName}] = hostFunc{name: meter.DepthExceededName}
	return s
}()

func (e *Engine) check(cm wazero.CompiledModule) (*Module, error) {
	instrumented := false
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		sig, ok := signatures[Import{mod, name}]
		if !ok {
			return nil, fmt.Errorf("%w: imports %s.%s, which the host does not provide", ErrInvalidModule, mod, name)
		}
		if mod == meter.HostModuleName {
			instrumented = instrumented || name == meter.RefillName
			continue
		}
		if !slices.Equal(f.ParamTypes(), sig.params) || !slices.Equal(f.ResultTypes(), sig.results) {
			return nil, fmt.Errorf("%w: imports %s.%s with the wrong signature", ErrInvalidModule, mod, name)
		}
	}
	if !instrumented {
		return nil, fmt.Errorf("%w: not instrumented (no import of %s.%s)", ErrInvalidModule, meter.HostModuleName, meter.RefillName)
	}
	if len(cm.ImportedMemories()) != 0 {
		return nil, fmt.Errorf("%w: imports a memory", ErrInvalidModule)
	}
	mems := cm.ExportedMemories()
	mem, ok := mems[ExportMemory]
	if !ok || len(mems) != 1 {
		return nil, fmt.Errorf("%w: must export exactly one memory, named %q", ErrInvalidModule, ExportMemory)
	}
	exports := cm.ExportedFunctions()
	if !hasSignature(exports[ExportAlloc], []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}) {
		return nil, fmt.Errorf("%w: must export %s(i32) -> i32", ErrInvalidModule, ExportAlloc)
	}
	_, init := exports[ExportInitialize]
	if init && !hasSignature(exports[ExportInitialize], nil, nil) {
		return nil, fmt.Errorf("%w: %s must take and return nothing", ErrInvalidModule, ExportInitialize)
	}
	memMax, ok := mem.Max()
	if !ok {
		memMax = 65536
	}
	return &Module{
		e:       e,
		cm:      cm,
		exports: exports,
		memMin:  mem.Min(),
		memMax:  memMax,
		init:    init,
		slots:   make(chan struct{}, e.cfg.MaxInstancesPerModule),
	}, nil
}

func hasSignature(f api.FunctionDefinition, params, results []api.ValueType) bool {
	return f != nil && slices.Equal(f.ParamTypes(), params) && slices.Equal(f.ResultTypes(), results)
}

// toolSignature is the signature of a tool export: (in_ptr, in_len) -> i64.
var (
	toolParams  = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}
	toolResults = []api.ValueType{api.ValueTypeI64}
)

// tool returns the tool export named name, or an invalid_input error.
func (m *Module) tool(name string) error {
	if name == ExportAlloc || name == ExportInitialize || strings.HasPrefix(name, meter.ReservedExportPrefix) {
		return invalidInput("%q is not a tool export", name)
	}
	if !hasSignature(m.exports[name], toolParams, toolResults) {
		return invalidInput("the module has no tool export %q (i32, i32) -> i64", name)
	}
	return nil
}

// Close releases the compiled module.
func (m *Module) Close(ctx context.Context) error {
	return m.cm.Close(ctx)
}
