package wasm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/stockade-dev/stockade/wasm/meter"
)

// callState is the host's side of one call: the instance, its meter, the
// grants and handles, the budgets left, and what the guest produced. Host
// functions find it in their context. Only the goroutine running the guest
// touches it (the watchdog touches only the meter).
type callState struct {
	engine *Engine
	lim    Limits
	grants grantSet
	broker Broker
	meter  *meter.Meter

	mod api.Module
	mem api.Memory

	handles map[int64]capability
	byCap   map[capability]int64

	hostCalls  int
	outputLeft int // MaxOutput minus what stdout, stderr and output used
	logLeft    int
	last       []byte // the last result, for result_read
	lastSecret bool   // last holds a secret's value

	output       []byte
	stdout       []byte
	stderr       []byte
	logs         []LogLine
	logTruncated bool
	messages     []Message
	fuelUsed     uint64
}

// capability is what a handle stands for.
type capability struct {
	kind int32
	name string
}

// grantSet is Grants as sets.
type grantSet struct {
	http, secrets, channels map[string]bool
	kv                      bool
}

func newGrantSet(g Grants) grantSet {
	set := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, s := range list {
			m[s] = true
		}
		return m
	}
	return grantSet{http: set(g.HTTP), secrets: set(g.Secrets), channels: set(g.Channels), kv: g.KV}
}

func (g grantSet) allows(c capability) bool {
	switch c.kind {
	case KindHTTP:
		return g.http[c.name]
	case KindSecret:
		return g.secrets[c.name]
	case KindKV:
		return g.kv && c.name == ""
	case KindChannel:
		return g.channels[c.name]
	}
	return false
}

func newCallState(e *Engine, lim Limits, g Grants, b Broker) *callState {
	return &callState{
		engine:     e,
		lim:        lim,
		grants:     newGrantSet(g),
		broker:     b,
		meter:      meter.NewMeter(lim.Fuel),
		handles:    make(map[int64]capability),
		byCap:      make(map[capability]int64),
		outputLeft: lim.MaxOutput,
		logLeft:    lim.MaxLogBytes,
	}
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

// bind attaches the instance; host functions refuse to serve any other.
func (st *callState) bind(mod api.Module) {
	st.mod = mod
	st.mem = mustMemory(mod)
}

// errNoCallState: a host function ran without the state of its instance
// in its context, which is an embedder's bug; the guest is stopped.
var errNoCallState = errors.New("wasm: host function called without the state of its instance")

// enter starts a host function: it finds the call's state, checks the
// deadline, counts the call and charges its fuel (HostCallFuel plus one
// unit per 64 bytes moved, counting at most the size of memory: no more can
// move). It panics, which stops the guest, when the call must end.
func enter(ctx context.Context, mod api.Module, moved uint64) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	if st == nil || st.mod == nil || st.mod != mod {
		panic(errNoCallState)
	}
	moved = min(moved, uint64(st.mem.Size()))
	st.checkContext(ctx)
	st.hostCalls++
	if st.hostCalls > st.lim.MaxHostCalls {
		panic(quota(ResourceHostCalls, "more than %d host calls", st.lim.MaxHostCalls))
	}
	if err := st.meter.Charge(HostCallFuel + moved/64); err != nil {
		panic(err)
	}
	return st
}

// checkContext stops the guest once the call's context is done.
func (st *callState) checkContext(ctx context.Context) {
	if ctx.Err() != nil {
		panic(contextError(ctx, "in a host call"))
	}
}

// read copies [ptr, ptr+n) out of guest memory.
func (st *callState) read(ptr, n uint32) ([]byte, bool) {
	b, ok := st.mem.Read(ptr, n)
	if !ok {
		return nil, false
	}
	return append(make([]byte, 0, len(b)), b...), true
}

// view is [ptr, ptr+n) of guest memory, not copied: for writing into it.
func (st *callState) view(ptr, n uint32) ([]byte, bool) {
	return st.mem.Read(ptr, n)
}

func (st *callState) writeU32(ptr, v uint32) bool { return st.mem.WriteUint32Le(ptr, v) }
func (st *callState) writeU64(ptr uint32, v uint64) bool {
	return st.mem.WriteUint64Le(ptr, v)
}

// newHandle returns the handle of c, issuing a random one the first time.
func (st *callState) newHandle(c capability) int64 {
	if h, ok := st.byCap[c]; ok {
		return h
	}
	var b [8]byte
	for {
		rand.Read(b[:])
		h := int64(binary.LittleEndian.Uint64(b[:]) &^ (1 << 63))
		if h == 0 {
			continue
		}
		if _, used := st.handles[h]; used {
			continue
		}
		st.handles[h] = c
		st.byCap[c] = h
		return h
	}
}

// use returns the capability of handle h, which must have been issued for
// kind; any other handle ends the call capability_denied.
func (st *callState) use(h int64, kind int32) capability {
	c, ok := st.handles[h]
	if !ok || c.kind != kind {
		panic(&Error{Class: ClassCapabilityDenied, Message: fmt.Sprintf("a handle the host did not issue for %s", kindNames[kind])})
	}
	return c
}

var kindNames = map[int32]string{KindHTTP: "http", KindSecret: "secrets", KindKV: "kv", KindChannel: "channels"}

// setResult makes b the last result and returns its length, or ErrQuota
// when it is too large.
func (st *callState) setResult(b []byte, secret bool) int64 {
	st.clearResult()
	if len(b) > MaxResultBytes {
		clear(b)
		return int64(ErrQuota)
	}
	st.last, st.lastSecret = b, secret
	return int64(len(b))
}

func (st *callState) clearResult() {
	if st.lastSecret {
		clear(st.last)
	}
	st.last, st.lastSecret = nil, false
}

// brokerResult maps a broker's answer to the guest's i64: the result's
// length, or a code. The context's own error ends the call.
func (st *callState) brokerResult(ctx context.Context, b []byte, err error, secret bool) int64 {
	st.checkContext(ctx)
	if err != nil {
		st.clearResult()
		return int64(brokerCode(err))
	}
	return st.setResult(b, secret)
}

// brokerCode is the code the guest sees for a broker's error.
func brokerCode(err error) Code {
	var c Code
	if errors.As(err, &c) {
		if _, ok := codeNames[c]; ok {
			return c
		}
	}
	return ErrUnavailable
}

// capture appends p to stdout or stderr under the output quota; over it,
// what fits is kept and the call ends.
func (st *callState) capture(dst *[]byte, p []byte) {
	if len(p) > st.outputLeft {
		*dst = append(*dst, p[:st.outputLeft]...)
		st.outputLeft = 0
		panic(quota(ResourceOutput, "stdout and stderr over the output quota of %d bytes", st.lim.MaxOutput))
	}
	*dst = append(*dst, p...)
	st.outputLeft -= len(p)
}

// result returns what the call produced.
func (st *callState) result() *Result {
	return &Result{
		Output:       st.output,
		Stdout:       st.stdout,
		Stderr:       st.stderr,
		Logs:         st.logs,
		LogTruncated: st.logTruncated,
		Messages:     st.messages,
		FuelUsed:     st.fuelUsed,
		HostCalls:    st.hostCalls,
	}
}

// clear drops the state's references to the instance and wipes secrets.
func (st *callState) clear() {
	st.clearResult()
	st.mod, st.mem = nil, nil
}
