package sdk

import "math"

// Capability kinds of the ABI's handle(); they equal executor/wasm's Kind*
// constants (a test keeps them equal).
const (
	kindHTTP    = 1
	kindSecret  = 2
	kindKV      = 3
	kindChannel = 4
)

// abiVersion is the host ABI version this SDK speaks (executor/wasm's
// ABIVersion).
const abiVersion = 1

// A Ctx is one tool call. It holds the capability handles the call has
// obtained, and it is closed when the tool returns: a Ctx kept past its
// call fails every host call with ErrInvalid. Its methods are the host
// functions; they are not safe for concurrent use (a skill has one
// thread).
type Ctx struct {
	handles map[handleKey]int64
	closed  bool
}

type handleKey struct {
	kind int32
	name string
}

func (c *Ctx) close() { c.closed, c.handles = true, nil }

// handle returns the host's handle for a capability, asking the host the
// first time in this call. Handles are per instance and per call, so they
// are never kept across calls.
func (c *Ctx) handle(kind int32, name string) (int64, error) {
	if c.closed {
		return 0, &opError{op: "handle", name: name, err: ErrInvalid}
	}
	k := handleKey{kind, name}
	if h, ok := c.handles[k]; ok {
		return h, nil
	}
	h := hostHandle(kind, name)
	if h < 0 {
		return 0, &opError{op: "handle", name: name, err: codeErr(h)}
	}
	if c.handles == nil {
		c.handles = make(map[handleKey]int64)
	}
	c.handles[k] = h
	return h, nil
}

// result turns the i64 a host function returned into its result: a
// negative code becomes its error, a length is read with result_read.
func result(op, name string, n int64) ([]byte, error) {
	if n < 0 {
		return nil, &opError{op: op, name: name, err: codeErr(n)}
	}
	if n > math.MaxInt32 {
		return nil, &opError{op: op, name: name, err: ErrQuota}
	}
	if n == 0 {
		return []byte{}, nil
	}
	buf := make([]byte, n)
	if got := hostResultRead(buf); int64(got) != n {
		return nil, &opError{op: "result_read", name: name, err: ErrInvalid}
	}
	return buf, nil
}

// done checks a result that carries no data.
func done(op, name string, n int64) error {
	if n < 0 {
		return &opError{op: op, name: name, err: codeErr(n)}
	}
	return nil
}
