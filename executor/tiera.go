package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/executor/wasm"
	"github.com/stockade-dev/stockade/ipc"
)

// preparedWasm is a Tier A executor ready for its one call: confined,
// with the module compiled.
type preparedWasm struct {
	digest   string
	receipt  ipc.Receipt
	engine   *wasm.Engine
	mod      *wasm.Module
	compiled time.Duration
}

func (p *preparedWasm) close() { p.engine.Close(context.Background()) }

// prepare answers a prepare request: the module comes as a sealed memfd.
func prepare(ctx context.Context, log *slog.Logger, c *ipc.Conn, m *ipc.Message) (*preparedWasm, error) {
	var req ipc.WasmModule
	if err := m.Decode(&req); err != nil {
		return nil, ipc.Errorf(ipc.ClassProtocol, "malformed prepare")
	}
	if len(m.Files()) != 1 {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "a prepare request comes with exactly one module descriptor")
	}
	p, err := prepareModule(ctx, req.Instrumented, req.CacheDir, m.Files()[0])
	if err == nil {
		log.Info("tier A executor warm", "module", req.Instrumented, "compile_ms", p.compiled.Milliseconds())
	}
	return p, err
}

// prepareModule reads the module the broker instrumented (a sealed memfd,
// checked against digest), confines this process (confineSelf: no file
// system, no network, the Tier A seccomp profile) and compiles the module.
// A runtime bug exploited by the guest lands in this confined process.
//
// With cacheDir (the broker's compiled-code cache, read-only here) the
// machine code the broker compiled is loaded instead; should that fail,
// the module is compiled here.
func prepareModule(ctx context.Context, digest, cacheDir string, module *os.File) (*preparedWasm, error) {
	sum, err := ipc.ParseSHA256(digest)
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "instrumented digest: %v", err)
	}
	fi, err := module.Stat()
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "module descriptor: %v", err)
	}
	code, err := ipc.ReadSealed(module, fi.Size(), sum)
	module.Close()
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "module: %v", err)
	}
	if cacheDir != "" && !filepath.IsAbs(cacheDir) {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "cache directory must be absolute")
	}
	receipt, err := confineSelf(cacheDir)
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "confining the executor: %v", err)
	}
	t0 := time.Now()
	engine, mod, err := compile(ctx, code, cacheDir)
	fromCache := cacheDir != "" && err == nil
	if err != nil && cacheDir != "" {
		engine, mod, err = compile(ctx, code, "")
	}
	if err != nil {
		return nil, err
	}
	if fromCache {
		receipt.Layers = append(receipt.Layers, "precompiled")
	}
	return &preparedWasm{digest: digest, receipt: receipt, engine: engine, mod: mod, compiled: time.Since(t0)}, nil
}

func compile(ctx context.Context, code []byte, cacheDir string) (*wasm.Engine, *wasm.Module, error) {
	engine, err := wasm.NewEngine(ctx, wasm.EngineConfig{CacheDir: cacheDir})
	if err != nil {
		return nil, nil, fmt.Errorf("wasm engine: %w", err)
	}
	mod, err := engine.Compile(ctx, code)
	if err != nil {
		engine.Close(context.Background())
		return nil, nil, ipc.Errorf(ipc.ClassInvalidInput, "the module does not compile: %v", err)
	}
	return engine, mod, nil
}

// run runs the call on the prepared module, forwarding the guest's
// capability uses to the broker over c.
func (p *preparedWasm) run(ctx context.Context, log *slog.Logger, c *ipc.Conn, spec *ipc.ExecSpec) (*ipc.Outcome, error) {
	w := spec.Wasm
	mod, receipt, compiled := p.mod, p.receipt, p.compiled
	lim := wasm.Limits{
		Fuel: w.Fuel, MemoryPages: w.MemoryPages, Timeout: time.Duration(spec.TimeoutMS) * time.Millisecond,
		MaxOutput: int(spec.MaxOutput), MaxHostCalls: w.MaxHostCalls,
	}
	g := wasm.Grants{HTTP: w.Grants.HTTP, Secrets: w.Grants.Secrets, KV: w.Grants.KV, Channels: w.Grants.Channels}
	br := &brokerLink{c: c, next: ipc.HostRequestIDBase}
	var ru0, ru1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	t1 := time.Now()
	res, err := mod.Run(ctx, w.Export, w.Input, lim, g, br)
	ran := time.Since(t1)
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	log.Info("tier A call", "skill", w.SkillID, "compile_ms", compiled.Milliseconds(), "run_us", ran.Microseconds(), "err", err)

	// What this process measured; the broker adds which release ran.
	out := &ipc.Outcome{
		Sandbox:   receipt,
		Wasm:      &ipc.WasmReceipt{},
		Durations: ipc.Durations{Run: ran.Microseconds()},
		Usage: ipc.Usage{
			UserMicros:   (ru1.Utime.Nano() - ru0.Utime.Nano()) / 1000,
			SystemMicros: (ru1.Stime.Nano() - ru0.Stime.Nano()) / 1000,
			MaxRSSKiB:    ru1.Maxrss,
		},
	}
	if res != nil {
		out.Wasm.FuelUsed, out.Wasm.HostCalls = res.FuelUsed, res.HostCalls
		for _, m := range res.Messages {
			out.Wasm.Messages = append(out.Wasm.Messages, ipc.ChannelMsg{Channel: m.Channel, Body: m.Body})
		}
		for _, l := range res.Logs {
			out.Wasm.Logs = append(out.Wasm.Logs, l.Level.String()+" "+l.Text)
		}
		out.Stdout = res.Output
		out.Stderr = append(append([]byte(nil), res.Stdout...), res.Stderr...)
	}
	if err == nil {
		out.Status = ipc.StatusOK
		return out, nil
	}
	var we *wasm.Error
	if !errors.As(err, &we) {
		return nil, fmt.Errorf("tier A run: %w", err)
	}
	out.Wasm.FuelUsed, out.Wasm.HostCalls = we.FuelUsed, we.HostCalls
	out.Stdout = nil
	switch we.Class {
	case wasm.ClassQuotaExceeded:
		out.Status, out.Wasm.Resource = ipc.StatusQuotaExceeded, string(we.Resource)
	case wasm.ClassTimedOut:
		out.Status = ipc.StatusTimedOut
	case wasm.ClassTrap, wasm.ClassFailed:
		out.Status, out.Wasm.Trap = ipc.StatusTrap, we.Trap
		if out.Wasm.Trap == "" {
			out.Wasm.Trap = string(we.Class)
		}
	case wasm.ClassCapabilityDenied:
		return nil, ipc.Errorf(ipc.ClassCapabilityDenied, "the skill used a capability it was not granted")
	default:
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "%s", we.Message)
	}
	return out, nil
}

// brokerLink performs the guest's capability uses through the broker: one
// host request at a time, each answered before the next.
type brokerLink struct {
	c    *ipc.Conn
	next uint64
}

var _ wasm.Broker = (*brokerLink)(nil)

func (b *brokerLink) call(ctx context.Context, req ipc.HostRequest) ([]byte, error) {
	b.next++
	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	var res ipc.HostResult
	if err := b.c.CallMax(b.next, ipc.KindHost, req, ipc.HostFrameMax, &res, timeout); err != nil {
		return nil, err // the call ends: ErrUnavailable to the guest, then the broker is gone
	}
	if res.Code < 0 {
		return nil, wasm.Code(res.Code)
	}
	return res.Data, nil
}

func (b *brokerLink) HTTP(ctx context.Context, host string, request []byte) ([]byte, error) {
	return b.call(ctx, ipc.HostRequest{Op: "http", Name: host, Data: request})
}

func (b *brokerLink) Secret(ctx context.Context, name string) ([]byte, error) {
	return b.call(ctx, ipc.HostRequest{Op: "secret", Name: name})
}

func (b *brokerLink) KV(ctx context.Context, op string, key, value []byte) ([]byte, error) {
	return b.call(ctx, ipc.HostRequest{Op: "kv_" + op, Key: key, Data: value})
}
