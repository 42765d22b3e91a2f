// Command goecho is a Tier A tool written in ordinary Go, built as a WASI
// reactor by executor/wasm's tests:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o goecho.wasm .
//
// Its tool "echo" writes a line to stdout, logs through the stockade host
// module, sleeps a millisecond, reads the clock and crypto/rand, and
// returns its input in a JSON object.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unsafe"
)

func main() {}

// pinned keeps the buffers handed to the host alive until the next call.
var pinned [][]byte

//go:wasmimport stockade log
func hostLog(level uint32, ptr unsafe.Pointer, n uint32) int32

//go:wasmexport stockade_alloc
func alloc(n uint32) uint32 {
	b := make([]byte, n+1)
	pinned = append(pinned, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport echo
func echo(ptr, n uint32) uint64 {
	in := string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n))
	fmt.Printf("goecho: %d bytes\n", n)
	msg := "goecho called"
	hostLog(1, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
	start := time.Now()
	time.Sleep(time.Millisecond)
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err)
	}
	out, err := json.Marshal(struct {
		Echo    string `json:"echo"`
		Unix    int64  `json:"unix"`
		SleptNs int64  `json:"slept_ns"`
		Random  string `json:"random"`
	}{in, start.Unix(), int64(time.Since(start)), hex.EncodeToString(r[:])})
	if err != nil {
		panic(err)
	}
	pinned = append(pinned[:0], out)
	return uint64(uintptr(unsafe.Pointer(&out[0])))<<32 | uint64(len(out))
}

//go:wasmexport crash
func crash(ptr, n uint32) uint64 {
	panic("goecho: crash requested")
}
