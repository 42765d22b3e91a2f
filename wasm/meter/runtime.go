package meter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// DefaultSlice is the fuel a guest may use between two exits to Go.
const DefaultSlice = 1_000_000

// Errors a metered call ends with. Host functions of this package panic with
// them, so wazero returns them, wrapped, from api.Function.Call; Classify
// maps any error from a call to a Kind.
var (
	// ErrFuelExhausted: the guest used more than Meter.Budget. Deterministic:
	// the same module and input exhaust at the same metered block.
	ErrFuelExhausted = errors.New("meter: fuel exhausted")
	// ErrDepthExceeded: a call would nest deeper than Config.MaxDepth.
	ErrDepthExceeded = errors.New("meter: call depth exceeded")
	// ErrTimedOut: the call's deadline passed, noticed at a refill or through
	// Meter.Interrupt with a nil cause.
	ErrTimedOut = errors.New("meter: timed out")
	// ErrInterrupted: Meter.Interrupt stopped the guest, or the call's
	// context was canceled; the cause is wrapped too.
	ErrInterrupted = errors.New("meter: interrupted")
	// ErrNoMeter: refill ran without a Meter in its context (see WithMeter),
	// or with the Meter of another instance. An embedder's bug; the guest is
	// stopped rather than run unmetered.
	ErrNoMeter = errors.New("meter: no meter for this instance")
)

// Meter is the fuel account of one instrumented instance. The executor
// creates one per instance, puts it in the context of every call into the
// instance (WithMeter), binds it once the instance exists, and calls Begin
// before each top-level call:
//
//	m := meter.NewMeter(budget)
//	ctx = meter.WithMeter(ctx, m)
//	mod, err := rt.InstantiateModule(ctx, compiled, cfg) // a start function is metered too
//	err = m.Bind(mod)
//	err = m.Begin()
//	_, err = mod.ExportedFunction("run").Call(ctx)
//	kind, trap := meter.Classify(err); used := m.Used()
//
// Budget bounds all the instance's execution, start function included: fuel
// is not reset between calls. Set Budget and Slice before the first call
// and do not change them while one runs. Interrupt may be called from any
// goroutine; the other methods from the goroutine running the guest (host
// functions included).
type Meter struct {
	Budget uint64 // total fuel the instance may use
	Slice  uint64 // fuel between exits to Go; 0 means DefaultSlice

	// mu orders every host-side access to the globals, and the interrupt
	// state, between the guest's goroutine and Interrupt's. (The guest's own
	// accesses are native loads and stores of aligned 8-byte words, which
	// the race detector does not see and which cannot tear on amd64 or
	// arm64.)
	mu    sync.Mutex
	cause error // why Interrupt was called, once it has been
	mod   api.Module
	used  api.MutableGlobal
	limit api.MutableGlobal
	depth api.MutableGlobal
}

// NewMeter returns a Meter with the given budget and the default slice.
func NewMeter(budget uint64) *Meter {
	return &Meter{Budget: budget, Slice: DefaultSlice}
}

type meterKey struct{}

// WithMeter returns a context carrying m, for the calls into m's instance
// (and its instantiation, when the module has a start function).
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// meterFrom returns the Meter in ctx, or nil.
func meterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// Bind attaches m to an instance of an instrumented module, finding its
// exported globals, and arms the limit. Binding again to the same instance
// (after a start function bound it) only re-arms the limit.
func (m *Meter) Bind(mod api.Module) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bindLocked(mod)
}

func (m *Meter) bindLocked(mod api.Module) error {
	if m.mod != nil {
		if m.mod != mod {
			return fmt.Errorf("%w: already bound to another instance", ErrNoMeter)
		}
		m.armLocked()
		return nil
	}
	var globals [3]api.MutableGlobal
	for i, name := range []string{UsedExport, LimitExport, DepthExport} {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return fmt.Errorf("%w: the instance does not export the mutable global %s; was the module instrumented?", ErrNoMeter, name)
		}
		globals[i] = g
	}
	m.mod = mod
	m.used, m.limit, m.depth = globals[0], globals[1], globals[2]
	m.armLocked()
	return nil
}

// Begin prepares a top-level call: call depth 0, and the limit armed for the
// next slice. A call that trapped may have left the depth raised.
func (m *Meter) Begin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mod == nil {
		return fmt.Errorf("%w: Begin before Bind", ErrNoMeter)
	}
	m.depth.Set(0)
	m.armLocked()
	return nil
}

// armLocked sets limit for the next slice; 0 once interrupted, so the guest
// enters refill at its next metered block.
func (m *Meter) armLocked() {
	if m.cause != nil {
		m.limit.Set(0)
		return
	}
	slice := m.Slice
	if slice == 0 {
		slice = DefaultSlice
	}
	used := m.used.Get()
	next := used + slice
	if next < used || next > m.Budget {
		next = m.Budget
	}
	m.limit.Set(next)
}

// Used returns the fuel charged so far: the instructions run and the
// dynamic costs, plus what host functions charged. After ErrFuelExhausted it
// exceeds Budget by at most the cost of the block that crossed it.
func (m *Meter) Used() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used == nil {
		return 0
	}
	return m.used.Get()
}

// Charge adds n to the fuel used, for work a host function does on the
// guest's behalf, and applies the refill rules: it returns ErrFuelExhausted
// once the total passes Budget, or the interruption. A host function
// panics with the error, which stops the guest.
func (m *Meter) Charge(n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mod == nil {
		return fmt.Errorf("%w: Charge before Bind", ErrNoMeter)
	}
	used := m.used.Get()
	if used+n < used {
		n = ^uint64(0) - used // saturate
	}
	m.used.Set(used + n)
	if used+n <= m.limit.Get() {
		return nil
	}
	return m.refillLocked(nil)
}

// Interrupt stops the guest at its next metered block, with cause (nil
// means ErrTimedOut). It may be called from any goroutine, for instance by
// a deadline watchdog, before or during a call; once interrupted, a Meter
// stays so.
//
// It stores 0 into the instance's limit global while the guest may be
// running. wazero's compiler reads that global from native code, so this
// is the intended unsynchronised handoff (an aligned 8-byte store, which
// cannot tear). wazero's interpreter reads globals with ordinary Go loads:
// there the store is a data race by the Go memory model, which the race
// detector reports; it is harmless on amd64 and arm64, but an embedder that
// needs race-clean runs of the interpreter should rely on the context
// instead, which refill checks once per Slice.
func (m *Meter) Interrupt(cause error) {
	if cause == nil {
		cause = ErrTimedOut
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cause == nil {
		m.cause = cause
	}
	if m.limit != nil {
		m.limit.Set(0)
	}
}

// interruptErrorLocked is the error an interrupted guest stops with.
func (m *Meter) interruptErrorLocked() error {
	if errors.Is(m.cause, ErrTimedOut) {
		return m.cause
	}
	return fmt.Errorf("%w: %w", ErrInterrupted, m.cause)
}

// refillLocked decides what happens when used passed limit: stop for an
// interruption, a done context or an exhausted budget, else arm the next
// slice. ctx is nil for Charge, whose caller checks its own context.
func (m *Meter) refillLocked(ctx context.Context) error {
	if m.cause != nil {
		return m.interruptErrorLocked()
	}
	if ctx != nil && ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrTimedOut, cause)
		}
		return fmt.Errorf("%w: %w", ErrInterrupted, cause)
	}
	if m.used.Get() > m.Budget {
		return ErrFuelExhausted
	}
	m.armLocked()
	return nil
}

// refill is the host function stockade_meter.refill: the guest calls it
// when used passes limit.
func refill(ctx context.Context, mod api.Module, _ []uint64) {
	m := meterFrom(ctx)
	if m == nil {
		panic(ErrNoMeter)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.mod == nil:
		// A start function runs before the embedder can call Bind.
		if err := m.bindLocked(mod); err != nil {
			panic(err)
		}
	case m.mod != mod:
		panic(fmt.Errorf("%w: the context's meter is bound to another instance", ErrNoMeter))
	}
	if err := m.refillLocked(ctx); err != nil {
		panic(err)
	}
}

// depthExceeded is the host function stockade_meter.depth_exceeded.
func depthExceeded(context.Context, api.Module, []uint64) {
	panic(ErrDepthExceeded)
}

// NewHostModule instantiates the "stockade_meter" host module in r, which
// instrumented modules import. Its functions find the Meter of the call
// through the context (WithMeter).
func NewHostModule(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(HostModuleName).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(refill), nil, nil).
		WithName(RefillName).
		Export(RefillName).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(depthExceeded), nil, nil).
		WithName(DepthExceededName).
		Export(DepthExceededName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("meter: instantiating the %s host module: %w", HostModuleName, err)
	}
	return nil
}
