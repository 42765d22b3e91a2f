// Package sdk is the guest side of Stockade's host ABI (version 1, drawn
// in executor/wasm): what a skill written in ordinary Go uses to read its
// input, return its output and call the host's capabilities. A skill is a
// package main built by the standard toolchain as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-s -o modules/NAME.wasm ./src
//	go run github.com/stockade-dev/stockade/sdk/cmd/wasm-table-max -o modules/NAME.wasm modules/NAME.wasm
//
// (Go 1.24 or later. -buildmode=c-shared makes a reactor: the host calls
// its _initialize export once, then tool exports; a default build is a
// command, whose _start runs main and exits. The second step gives the
// function table a maximum equal to its size: Go's linker leaves it
// without one, which the verifier's audit refuses, and Go never grows it.)
//
// # Writing a tool
//
// A tool is a typed function wrapped by Tool, and an export of the
// skill's main package (go:wasmexport works only on package-level
// functions) named as the manifest's `export`:
//
//	type in struct{ Name string `json:"name"` }
//	type out struct{ Greeting string `json:"greeting"` }
//
//	func greet(ctx *sdk.Ctx, in in) (out, error) {
//		ctx.Log(sdk.LevelInfo, "greeting "+in.Name)
//		return out{"Hello, " + in.Name}, nil
//	}
//
//	//go:wasmexport greet
//	func greetExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(greet)) }
//
//	func main() {}
//
// The input is decoded strictly (unknown members are errors); an error
// becomes the output {"error":"<message>"}, which the agent reads. A
// panic traps the module (the call ends trap, the panic on stderr).
// testdata/skills/gohello and gokv are complete examples.
//
// # Capabilities
//
// Each host capability is a method of the call's Ctx and is granted only
// when the manifest's [capabilities] ask for it and the call's grants
// include it:
//
//	ctx.HTTP(host).Do(req)        handle(KindHTTP, host), http_request
//	ctx.Secret(name)              handle(KindSecret, name), secret_get
//	ctx.KV().Get/Put/Delete/List  handle(KindKV, ""), kv_get/kv_put/kv_delete/kv_list
//	ctx.Channel(name).Send(msg)   handle(KindChannel, name), channel_send
//	ctx.Log(level, msg)           log
//
// Results come back through result_read. A failed host call returns an
// error wrapping one of ErrDenied, ErrNotFound, ErrQuota, ErrInvalid or
// ErrUnavailable (the ABI's Err* codes): test with errors.Is. Handles are
// asked for once per call and never kept across calls. A module imports
// only the host functions its code reaches, so a skill that never calls
// KV does not import kv_get, and the verifier's audit does not have to
// allow it.
//
// The module exports memory, _initialize, stockade_alloc (this package:
// input buffers stay referenced until the next tool call takes them, the
// output until the next call) and the tools. Besides "stockade" it
// imports the wasi_snapshot_preview1 functions of the Go runtime and of
// package os (clocks, random, args and environment, fd_write and the fd
// calls of os's start-up, poll_oneoff, proc_exit, sched_yield), which the
// host's restricted WASI provides. The runtime seeds its hash maps from
// random_get, so a Go skill's fuel use varies slightly from run to run
// unless the host's random is deterministic.
//
// On other platforms the package builds, and every host call returns
// ErrNotInSkill.
//
// # Security
//
// The SDK runs inside the skill and trusts the host that runs it: it
// believes the lengths and bytes the host returns, after checking that a
// result fits an i32 and that result_read copied what was announced, and
// that a tool's input is a buffer stockade_alloc handed out. The input's
// contents come from the agent: Tool decodes them strictly, and a
// malformed input becomes an error output, not a call of the tool.
// Nothing a skill does through this package widens what its call was
// granted: the host checks every handle and every request.
package sdk
