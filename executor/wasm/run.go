package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/stockade-dev/stockade/wasm/meter"
)

// Limits bound one call. A zero field means its default. The call-depth
// limit is not here: meter.Instrument compiles it into the module
// (meter.Config.MaxDepth).
type Limits struct {
	// Fuel is the budget of the whole call, _initialize and
	// stockade_alloc included. Default 10,000,000.
	Fuel uint64
	// MemoryPages caps linear memory, in 64 KiB pages; a smaller maximum
	// declared by the module also holds. Default 1024 (64 MiB), at most
	// 65536.
	MemoryPages uint32
	// Timeout is the wall clock of the call, waiting for an instance slot
	// included; the context's deadline holds too. Default 30 s.
	Timeout time.Duration
	// MaxOutput caps the tool's output plus what it writes to stdout and
	// stderr, in bytes. Default 1 MiB.
	MaxOutput int
	// MaxHostCalls caps calls to host functions, WASI's included. Default
	// 10,000.
	MaxHostCalls int
	// MaxLogBytes caps the text of log lines. Default 64 KiB.
	MaxLogBytes int
	// MaxMessages and MaxMessageBytes cap channel_send: the number of
	// messages and the size of each. Defaults 16 and 64 KiB.
	MaxMessages     int
	MaxMessageBytes int
}

// Defaults of Limits.
const (
	DefaultFuel            = 10_000_000
	DefaultMemoryPages     = 1024
	DefaultTimeout         = 30 * time.Second
	DefaultMaxOutput       = 1 << 20
	DefaultMaxHostCalls    = 10_000
	DefaultMaxLogBytes     = 64 << 10
	DefaultMaxMessages     = 16
	DefaultMaxMessageBytes = 64 << 10
	maxMemoryPages         = 65536
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.Fuel == 0 {
		l.Fuel = DefaultFuel
	}
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	l.MemoryPages = min(l.MemoryPages, maxMemoryPages)
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	def(&l.MaxOutput, DefaultMaxOutput)
	def(&l.MaxHostCalls, DefaultMaxHostCalls)
	def(&l.MaxLogBytes, DefaultMaxLogBytes)
	def(&l.MaxMessages, DefaultMaxMessages)
	def(&l.MaxMessageBytes, DefaultMaxMessageBytes)
	return l
}

// Grants are the capabilities of one call, as the broker intersected them
// (policy, manifest, request). Names are compared exactly: HTTP hosts in
// the canonical form of policy.ParseHost.
type Grants struct {
	HTTP     []string // hosts
	Secrets  []string // secret names
	KV       bool     // the skill's key-value namespace
	Channels []string // channel names
}

// Broker performs capabilities for the guest; the executor forwards these
// calls over its socket to the broker, which checks each against the
// call's grants again. Every method gets the call's context and must honour
// it. An error that is (errors.As) a Code gives the guest that code; any
// other error gives it ErrUnavailable, except the context's own error,
// which ends the call (timed_out, or failed if canceled).
type Broker interface {
	// HTTP performs request, the canonical JSON the host re-encoded (see
	// the package documentation), to host, the granted host the URL names.
	HTTP(ctx context.Context, host string, request []byte) ([]byte, error)
	// Secret returns the value of a granted secret.
	Secret(ctx context.Context, name string) ([]byte, error)
	// KV runs op ("get", "put", "delete" or "list") on the skill's
	// namespace; for "list", key is the prefix and the result a JSON array.
	KV(ctx context.Context, op string, key, value []byte) ([]byte, error)
}

// LogLine is a line the guest logged.
type LogLine struct {
	Level slog.Level
	Text  string
}

// Message is a message the guest sent on a channel, for the agent.
type Message struct {
	Channel string
	Body    []byte
}

// Result is what a call produced. Run returns it on failure too (without
// Output), for the logs and accounting of the failed call.
type Result struct {
	Output       []byte // the tool's output, as the guest returned it
	Stdout       []byte
	Stderr       []byte
	Logs         []LogLine
	LogTruncated bool // lines were cut or dropped at MaxLogBytes
	Messages     []Message
	FuelUsed     uint64
	HostCalls    int
}

// Run runs one call of the tool export on input in a fresh instance, under
// lim, with the capabilities of g performed by b (nil: every capability
// operation returns ErrUnavailable). It always closes the instance. A
// failure is an *Error; the Result is returned with it when the instance
// ran.
func (m *Module) Run(ctx context.Context, export string, input []byte, lim Limits, g Grants, b Broker) (*Result, error) {
	lim = lim.withDefaults()
	if err := m.tool(export); err != nil {
		return nil, err
	}
	if uint64(len(input)) > math.MaxInt32 {
		return nil, invalidInput("an input of %d bytes", len(input))
	}
	if m.memMin > lim.MemoryPages {
		return nil, quota(ResourceMemory, "the module needs %d pages of memory, over the limit of %d", m.memMin, lim.MemoryPages)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	deadline := ctx
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	defer m.release()

	// The memory is reserved before instantiation: wazero cannot handle an
	// allocator that fails there.
	reserve := uint64(min(lim.MemoryPages, m.memMax)) * pageSize
	r, err := m.e.pool.reserve(reserve)
	if err != nil {
		return nil, &Error{Class: ClassFailed, Message: "cannot reserve linear memory", Err: err}
	}
	mem := &instanceMemory{r: r, limit: reserve}

	st := newCallState(m.e, lim, g, b)
	defer st.clear()
	ctx = meter.WithMeter(ctx, st.meter)
	ctx = withCallState(ctx, st)
	// The watchdog: at the deadline (or cancellation) the guest enters
	// refill at its next metered block and stops there.
	stop := context.AfterFunc(deadline, func() {
		if errors.Is(deadline.Err(), context.DeadlineExceeded) {
			st.meter.Interrupt(nil)
		} else {
			st.meter.Interrupt(context.Cause(deadline))
		}
	})
	defer stop()

	err = st.run(experimental.WithMemoryAllocator(ctx, allocatorFor(mem)), m, export, input)
	if !mem.freed {
		mem.Free() // instantiation failed before wazero owned it
	}
	res := st.result()
	if err != nil {
		e := st.classify(err, mem.refused)
		e.FuelUsed, e.HostCalls = res.FuelUsed, res.HostCalls
		return res, e
	}
	return res, nil
}

// acquire takes a slot of the module, then one of the engine.
func (m *Module) acquire(ctx context.Context) error {
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		return contextError(ctx, "waiting for an instance slot of the module")
	}
	select {
	case m.e.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		<-m.slots
		return contextError(ctx, "waiting for an instance slot")
	}
}

func (m *Module) release() {
	<-m.e.slots
	<-m.slots
}

// contextError is the error of a call whose context is done.
func contextError(ctx context.Context, doing string) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Class: ClassTimedOut, Message: "the deadline passed " + doing, Err: context.Cause(ctx)}
	}
	return &Error{Class: ClassFailed, Message: "canceled " + doing, Err: context.Cause(ctx)}
}

// instanceConfig configures every instance: anonymous, no start
// functions (a WASI command's _start is not run; the audit refuses start
// sections), and crypto/rand as wazero's random source, which the WASI here
// never reads but which is cheaper than the default's seeding of math/rand
// per instance (research note §0.7). A ModuleConfig is immutable, so one is
// shared.
var instanceConfig = wazero.NewModuleConfig().
	WithName("").
	WithStartFunctions().
	WithRandSource(rand.Reader)

// run instantiates the module, and calls _initialize, stockade_alloc and
// the tool. The instance is closed before it returns.
func (st *callState) run(ctx context.Context, m *Module, export string, input []byte) error {
	mod, err := m.e.rt.InstantiateModule(ctx, m.cm, instanceConfig)
	if err != nil {
		return err
	}
	defer func() {
		st.fuelUsed = st.meter.Used()
		mod.Close(context.Background())
	}()
	if err := st.meter.Bind(mod); err != nil {
		return err
	}
	st.bind(mod)
	stack := make([]uint64, 2)
	call := func(name string, args ...uint64) error {
		if err := st.meter.Begin(); err != nil {
			return err
		}
		copy(stack, args)
		return mod.ExportedFunction(name).CallWithStack(ctx, stack)
	}

	if m.init {
		if err := call(ExportInitialize); err != nil {
			return err
		}
	}
	if err := call(ExportAlloc, uint64(len(input))); err != nil {
		return err
	}
	inPtr := uint32(stack[0])
	if !st.mem.Write(inPtr, input) {
		return failed("%s returned a buffer outside memory", ExportAlloc)
	}
	if err := call(export, uint64(inPtr), uint64(len(input))); err != nil {
		if c, ok := exitCode(err); ok && c == 0 {
			return nil // proc_exit(0): success, without output
		}
		return err
	}
	outPtr, outLen := uint32(stack[0]>>32), uint32(stack[0])
	if int(outLen) > st.outputLeft {
		return quota(ResourceOutput, "an output of %d bytes, over the %d left of the output quota", outLen, st.outputLeft)
	}
	out, ok := st.mem.Read(outPtr, outLen)
	if !ok {
		return failed("the tool returned an output outside memory")
	}
	st.output = append(make([]byte, 0, len(out)), out...)
	st.outputLeft -= len(out)
	return nil
}

// exitCode returns the code of a proc_exit that ended a call.
func exitCode(err error) (uint32, bool) {
	var c procExit
	if errors.As(err, &c) {
		return uint32(c), true
	}
	return 0, false
}

// classify maps the error that ended a call to an *Error. refused says
// whether the memory allocator refused a grow.
func (st *callState) classify(err error, refused bool) *Error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		if c.Err == nil && err != e {
			c.Err = err
		}
		return &c
	}
	if c, ok := exitCode(err); ok {
		e := &Error{Class: ClassTrap, Trap: TrapExit, Message: "the module exited with a non-zero code", Err: err}
		if c == 0 {
			// Exiting with 0 from the tool succeeds (see run); from
			// _initialize or stockade_alloc, the tool never ran.
			e = failed("the module exited before its tool ran")
			e.Err = err
		}
		return memoryQuota(e, refused)
	}
	kind, detail := meter.Classify(err)
	switch kind {
	case meter.KindFuel:
		return &Error{Class: ClassQuotaExceeded, Resource: ResourceFuel, Message: "the fuel budget is spent", Err: err}
	case meter.KindDepth:
		return &Error{Class: ClassQuotaExceeded, Resource: ResourceDepth, Message: "the call stack is too deep", Err: err}
	case meter.KindTimedOut:
		return &Error{Class: ClassTimedOut, Message: "the deadline passed", Err: err}
	case meter.KindInterrupted:
		return &Error{Class: ClassFailed, Message: "the call was canceled", Err: err}
	case meter.KindTrap:
		return memoryQuota(&Error{Class: ClassTrap, Trap: detail, Message: "the module trapped", Err: err}, refused)
	}
	return &Error{Class: ClassFailed, Message: "the call failed", Err: err}
}

// memoryQuota reports a guest that failed after the host refused it memory
// as out of memory, keeping the trap.
func memoryQuota(e *Error, refused bool) *Error {
	if !refused {
		return e
	}
	return &Error{Class: ClassQuotaExceeded, Resource: ResourceMemory, Trap: e.Trap,
		Message: "the module ran out of memory at the limit", Err: e.Err}
}

// mustMemory is the instance's memory, which Compile checked exists.
func mustMemory(mod api.Module) api.Memory {
	mem := mod.Memory()
	if mem == nil {
		panic("wasm: instance without memory") // Compile checked it
	}
	return mem
}
