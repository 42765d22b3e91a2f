// Package wasm runs Tier A calls: a verified, fuel-instrumented WASM module
// in wazero, inside a short-lived executor that has already confined itself
// (no network, seccomp, Landlock), with host capabilities the broker
// performs.
//
// An Engine holds one wazero runtime and the host modules; Compile loads a
// module as wasm/meter.Instrument produced it, and Module.Run runs one call
// in a fresh instance that is always closed afterwards:
//
//	e, err := wasm.NewEngine(ctx, wasm.EngineConfig{})
//	m, err := e.Compile(ctx, instrumented)
//	res, err := m.Run(ctx, "search", input, wasm.Limits{Fuel: 50_000_000}, grants, broker)
//	var werr *wasm.Error // errors.As(err, &werr): Class, Resource, Trap, FuelUsed
//
// # Host ABI, version 1
//
// A skill module imports host functions from the module "stockade" (and,
// for skills built with standard toolchains, a restricted
// "wasi_snapshot_preview1"). Pointers and lengths are i32 offsets into the
// module's exported memory "memory". Every host function charges fuel
// (HostCallFuel plus one unit per 64 bytes moved) and counts against the
// call's host-call budget; a call over either ends quota_exceeded.
//
// The guest exports:
//
//	memory                          its linear memory
//	stockade_alloc(len i32) -> i32  returns a buffer of len bytes the host may fill
//	<tool export>(in_ptr i32, in_len i32) -> i64
//	                                runs the tool on the input (JSON) the host
//	                                wrote at in_ptr; returns (out_ptr << 32) | out_len,
//	                                the output (JSON) in guest memory
//	_initialize()                   optional (Go's c-shared wasip1 modules): called
//	                                once before anything else
//
// A tool export cannot be named stockade_alloc, _initialize or __stockade_*.
// The host reads the output before the instance closes; an output outside
// memory ends the call failed, one over the output quota quota_exceeded.
// The host does not parse the output: the broker checks it against the
// tool's output schema.
//
// The host provides (module "stockade"):
//
//	abi_version() -> i32                            ABIVersion
//	log(level i32, ptr i32, len i32) -> i32         a log line, capped, attributed
//	handle(kind i32, name_ptr i32, name_len i32) -> i64
//	                                                a handle for a capability of the
//	                                                call's grants (kind: KindHTTP with
//	                                                the host, KindSecret with the name,
//	                                                KindKV with "", KindChannel with
//	                                                the name); ErrDenied when not granted
//	http_request(h i64, req_ptr i32, req_len i32) -> i64
//	                                                req is JSON {"method","url","headers",
//	                                                "body" (base64)}; the result is JSON
//	                                                {"status","headers","body" (base64)}
//	secret_get(h i64) -> i64                        the secret's value
//	kv_get(h i64, key_ptr i32, key_len i32) -> i64  the value; ErrNotFound when absent
//	kv_put(h i64, key_ptr i32, key_len i32, val_ptr i32, val_len i32) -> i64
//	kv_delete(h i64, key_ptr i32, key_len i32) -> i64
//	kv_list(h i64, prefix_ptr i32, prefix_len i32) -> i64
//	                                                JSON array of the keys
//	channel_send(h i64, ptr i32, len i32) -> i64    a message returned to the agent
//	result_read(ptr i32, len i32) -> i32            copies the last result (up to len
//	                                                bytes) to ptr; returns the bytes copied
//
// A function returning i64 returns the length of its result (read it with
// result_read) or a negative error code (Err*). Handles are random per
// instance and map to the call's grants in the host: using a handle the host
// did not issue ends the call capability_denied.
//
// The details, which the functions above leave open:
//
//   - handle: an unknown kind, a name over MaxNameBytes or outside memory,
//     or a KindKV name that is not empty, is ErrInvalid.
//   - Handles are positive (never 0, never an error code), random per
//     instance, and stable within it: asking twice for the same capability
//     returns the same handle. A handle used with a function of another kind
//     (a secret handle passed to http_request) is a handle the host did not
//     issue for that use, and ends the call capability_denied.
//   - The last result is the result of the latest function returning i64
//     (other than handle): kv_put, kv_delete and channel_send leave an empty
//     one, and an error code leaves none. result_read copies from its start
//     and may be repeated; it returns ErrInvalid (as i32) when [ptr, ptr+len)
//     is outside memory.
//   - log: level is LogDebug, LogInfo, LogWarn or LogError (else ErrInvalid);
//     returns 0, or ErrQuota once the call's log quota is spent (the line is
//     cut to what fits, and later lines dropped). Invalid UTF-8 is replaced
//     with U+FFFD.
//   - http_request: the request is one JSON object, UTF-8, no member
//     repeated or unknown: "method" (GET, HEAD, POST, PUT, PATCH, DELETE or
//     OPTIONS), "url" (absolute http or https, no user information or
//     fragment, in canonical form: the host lower-case and the URL
//     unchanged by parsing and printing it again), "headers" (optional, an
//     object of header name to value; hop-by-hop and framing headers such as
//     Host, Content-Length, Connection are refused) and "body" (optional,
//     standard base64 with padding). A request over MaxRequestBytes is
//     ErrQuota, a malformed one ErrInvalid, and one whose URL host is not
//     the handle's host ErrDenied. The broker gets the request re-encoded
//     by the host (header names lower-case), never the guest's bytes,
//     checks the grant again and returns the response; its "headers" is an
//     object too.
//   - kv keys (and kv_list prefixes, which may be empty) are 1 to MaxKeyBytes
//     bytes of UTF-8 without control characters (ErrInvalid otherwise);
//     values are at most MaxValueBytes (ErrQuota). The broker applies its own
//     quotas.
//   - channel_send returns 0; a message over the call's per-message size or
//     count quota is ErrQuota.
//   - A result larger than MaxResultBytes is ErrQuota.
//
// # Restricted WASI
//
// The module "wasi_snapshot_preview1" provides every function of WASI
// preview 1 with its standard signature, so that any toolchain's imports
// resolve, but little behind them: empty arguments and environment; fd 0
// reads end of file; fd_write to fd 1 and 2 is captured under the call's
// output quota (over it, the call ends quota_exceeded); clock_time_get,
// clock_res_get and random_get are real (realtime and monotonic clocks,
// crypto/rand); poll_oneoff sleeps for clock subscriptions (until the
// deadline at most) and reports stdio ready; sched_yield does nothing;
// proc_exit ends the call (code 0 succeeds with an empty output, another is
// a trap "exit"). There are no preopened directories: file-system, socket
// and other descriptor functions return EBADF (ENOTSUP, ESPIPE, ENOTDIR or
// ENOTSOCK on fds 0 to 2), proc_raise ENOSYS. Every call is charged and
// counted like the stockade functions. Imports lists all of them, for the
// verifier's audit.
//
// # Security
//
// What this package trusts: the module bytes given to Compile were verified
// by the verifier (the audit's limits: tables with a maximum, no start
// section, allowed imports only) and instrumented by wasm/meter in a trusted
// role; Compile checks only that the imports are its own and that the
// module looks instrumented, and the Meter refuses to run a module whose
// fuel globals are missing. Limits and Grants come from the broker, which
// already intersected policy, manifest and request. The broker is trusted
// to perform capabilities; it gets requests the host has re-encoded.
//
// What it does not trust: the guest. Every pointer and length from it is
// bounds-checked against its memory and copied before use (an out-of-bounds
// argument is ErrInvalid, never a Go panic); every size is capped before
// anything is allocated for it; handles are unguessable and checked against
// the grants for each use; each call runs in its own instance with fresh
// memory (pooled memory is returned to the kernel and reads as zeros), and
// nothing of one call is visible to the next. The guest cannot escape
// fuel, depth, memory, host-call, output or wall-clock limits: the deadline
// is checked in every host function and at every refill, and a watchdog
// makes the guest enter refill at its next metered block. Secret values are
// never logged and are cleared from host buffers when the call ends.
// Messages in errors are the host's own words, never guest bytes.
package wasm

import "github.com/stockade-dev/stockade/ipc"

import "fmt"

// ABIVersion is the version of the host ABI this package implements.
const ABIVersion = 1

// HostModule is the import module of the host ABI.
const HostModule = "stockade"

// Capability kinds for handle().
const (
	KindHTTP    = 1
	KindSecret  = 2
	KindKV      = 3
	KindChannel = 4
)

// Code is an error code a host function returns to the guest (a negative
// i64, or i32 for log and result_read). A Code is also an error: a Broker
// returns one (possibly wrapped) to choose the code the guest sees.
type Code int64

// Error codes a host function returns to the guest (negative i64).
const (
	ErrDenied      Code = Code(ipc.HostDenied)      // the capability is not granted, or the broker refused the address
	ErrNotFound    Code = Code(ipc.HostNotFound)    // no such key or secret value
	ErrQuota       Code = Code(ipc.HostQuota)       // a size or count limit
	ErrInvalid     Code = Code(ipc.HostInvalid)     // malformed arguments (bad JSON, bad UTF-8 key, out-of-bounds)
	ErrUnavailable Code = Code(ipc.HostUnavailable) // the broker could not do it (network error)
)

var codeNames = map[Code]string{
	ErrDenied: "denied", ErrNotFound: "not found", ErrQuota: "over quota",
	ErrInvalid: "invalid", ErrUnavailable: "unavailable",
}

func (c Code) Error() string {
	if name, ok := codeNames[c]; ok {
		return "stockade host call: " + name
	}
	return fmt.Sprintf("stockade host call: code %d", int64(c))
}

// Log levels for log().
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// Sizes the host functions accept and return.
const (
	MaxNameBytes    = 256      // a capability name passed to handle()
	MaxKeyBytes     = 256      // a kv key or prefix (the broker's store holds no longer key)
	MaxValueBytes   = 1 << 20  // a kv value
	MaxRequestBytes = 4 << 20  // an http_request request, JSON
	MaxResultBytes  = 16 << 20 // any result
)

// Host function names in module "stockade".
const (
	FnABIVersion  = "abi_version"
	FnLog         = "log"
	FnHandle      = "handle"
	FnHTTPRequest = "http_request"
	FnSecretGet   = "secret_get"
	FnKVGet       = "kv_get"
	FnKVPut       = "kv_put"
	FnKVDelete    = "kv_delete"
	FnKVList      = "kv_list"
	FnChannelSend = "channel_send"
	FnResultRead  = "result_read"
)

// Guest exports the host uses.
const (
	ExportMemory     = "memory"
	ExportAlloc      = "stockade_alloc"
	ExportInitialize = "_initialize"
)

// HostCallFuel is the flat fuel charge of one host call; data moved costs
// one more unit per 64 bytes.
const HostCallFuel = 100
