package meter

import (
	"context"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Schedule is the version of the cost table (see the package documentation).
// Any change to what an instruction costs, or to where charges are placed in
// a way that changes fuel totals, is a new schedule.
const Schedule = 1

// Features is the WebAssembly feature set Instrument accepts and validates
// against: WebAssembly 2.0 without SIMD.
const Features = api.CoreFeaturesV2 &^ api.CoreFeatureSIMD

// Names the instrumentation adds to a module.
const (
	HostModuleName        = "stockade_meter"
	RefillName            = "refill"
	DepthExceededName     = "depth_exceeded"
	UsedExport            = "__stockade_fuel_used"
	LimitExport           = "__stockade_fuel_limit"
	DepthExport           = "__stockade_depth"
	ReservedExportPrefix  = "__stockade_"
	DefaultMaxDepth       = 4096
	MaxModuleBytes        = 64 << 20 // larger inputs are refused with ErrLimit
	MaxLocals             = 50000    // declared locals per function; more is refused with ErrLimit
	maxConfiguredMaxDepth = math.MaxInt32
)

// Config tunes the instrumentation. The zero value is the default.
type Config struct {
	// MaxDepth is how many frames of guest functions that call guest
	// functions may be on the stack at once (leaf functions are not
	// counted; see the package documentation); entering one more calls
	// depth_exceeded. 0 means DefaultMaxDepth; at most math.MaxInt32.
	MaxDepth uint32
}

// Info describes an instrumentation.
type Info struct {
	Schedule  int     // the cost schedule applied: Schedule
	MaxDepth  uint32  // the call depth limit compiled in
	Functions int     // defined functions rewritten
	Blocks    int     // charge sequences inserted (metered blocks with a non-zero cost)
	Tracked   int     // functions with the depth limiter (those that call guest functions)
	Hoisted   int     // small leaf functions whose cost their direct callers charge (copied uncharged)
	Dynamic   int     // bulk-memory, memory.grow and table sites charged by their operand
	Dropped   int     // custom sections dropped (names, producers, DWARF)
	InBytes   int     // size of the original module
	OutBytes  int     // size of the instrumented module
	Growth    float64 // OutBytes / InBytes
}

// Instrument rewrites module so that it charges fuel, as the package
// documentation describes, and returns the new module. It first walks the
// module itself, refusing what it cannot meter with a typed error
// (ErrMalformed, ErrUnsupported, ErrReserved, ErrLimit; ErrConfig for a bad
// cfg), then asks wazero to
// validate the original with Features (ErrInvalid); only a module that
// passes both is returned. The output is meant to be compiled by a runtime
// configured with Features, in which NewHostModule has been instantiated.
func Instrument(module []byte, cfg Config) (out []byte, info Info, err error) {
	out, core, info, err := rewrite(module, cfg)
	if err != nil {
		return nil, Info{}, err
	}
	if err := validate(core); err != nil {
		return nil, Info{}, err
	}
	return out, info, nil
}

// validate compiles module with wazero's interpreter, which decodes and
// validates exactly as the compiler does at a fraction of the cost.
//
// wazero v1.12.0 panics on some malformed code sections (a function whose
// local declarations run past its body), and sizes some allocations by
// counts it has not checked; the walk in rewrite refuses both before this
// runs, and the recover is a second line.
func validate(module []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: wazero panicked: %v", ErrInvalid, r)
		}
	}()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(Features).
		WithCustomSections(false).
		WithDebugInfoEnabled(false))
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return cm.Close(ctx)
}

// rewrite is Instrument without the validation by wazero: it returns the
// instrumented module, and core, the original without its custom sections,
// which is what must be validated (wazero decodes the name section even
// when told to ignore custom sections, and would be the first to read it).
// Its output is only safe to use once core has been validated.
func rewrite(module []byte, cfg Config) (out, core []byte, info Info, err error) {
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.MaxDepth > maxConfiguredMaxDepth {
		return nil, nil, Info{}, fmt.Errorf("%w: MaxDepth %d over %d", ErrConfig, cfg.MaxDepth, maxConfiguredMaxDepth)
	}
	if len(module) > MaxModuleBytes {
		return nil, nil, Info{}, fmt.Errorf("%w: %d bytes, over %d", ErrLimit, len(module), MaxModuleBytes)
	}
	w := &moduleRewriter{cfg: cfg}
	out, err = w.run(module)
	if err != nil {
		return nil, nil, Info{}, err
	}
	info = w.info
	info.Schedule = Schedule
	info.MaxDepth = cfg.MaxDepth
	info.InBytes = len(module)
	info.OutBytes = len(out)
	if len(module) > 0 {
		info.Growth = float64(len(out)) / float64(len(module))
	}
	return out, w.core, info, nil
}
