//go:build wasip1

package sdk

import (
	"errors"
	"unsafe"
)

// Input and output buffers.
//
// The host calls stockade_alloc(n) for each input, writes the input there
// and then calls a tool export with (ptr, n). Go's garbage collector does
// not move objects, but it frees what nothing references: every buffer
// handed out is kept in inputs until a tool export runs, which takes its
// own and drops the rest (the host has no business writing into them once
// it has called the tool). A map rather than one growing buffer, so that
// two allocations before a call (a retry) do not overwrite each other.
//
// The output stays referenced by output until the next tool call, because
// the host reads it after the export has returned.
var (
	inputs = map[uint32][]byte{}
	output []byte
)

// versionChecked is set once abi_version has answered abiVersion.
var versionChecked bool

var errVersion = errors.New("sdk: the host speaks another ABI version than 1")

// maxInput bounds one allocation; the host's input cap is far lower.
const maxInput = 1 << 30

// addr is b's offset in linear memory (wasm32: a pointer is an i32).
func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

//go:wasmexport stockade_alloc
func stockadeAlloc(n int32) uint32 {
	if n < 0 || n > maxInput {
		return 0
	}
	b := make([]byte, max(n, 1)) // a distinct, non-zero address even for n == 0
	p := addr(b)
	inputs[p] = b[:n]
	return p
}

// Handle runs h on the input the host wrote at inPtr (inLen bytes, from
// stockade_alloc) and returns the output as the ABI wants it:
// (out_ptr << 32) | out_len. A skill's tool export is one line that calls
// it; see the package documentation.
func Handle(inPtr, inLen int32, h Handler) int64 {
	buf, ok := inputs[uint32(inPtr)]
	clear(inputs)
	output = nil
	var in []byte
	switch {
	case inLen == 0:
	case !ok || inLen < 0 || int(inLen) > len(buf):
		return export(ErrorOutput(&opError{op: "input", err: ErrInvalid}))
	default:
		in = buf[:inLen]
	}
	if !versionChecked {
		if v := hostABIVersion(); v != abiVersion {
			return export(ErrorOutput(&opError{op: "abi_version", err: errVersion}))
		}
		versionChecked = true
	}
	return export(serve(h, in))
}

func export(out []byte) int64 {
	output = out
	return int64(addr(out))<<32 | int64(len(out))
}
