package ipc

// Tier A on the exec channel:
//
//	broker                                   executor
//	  exec {tier: "A", wasm: WasmSpec}  ───►   (module: one sealed memfd attached)
//	                                         compiles, confines itself, runs the guest
//	  ◄─── host {id: n, HostRequest}           a capability the broker performs
//	  host {id: n, HostResult} | error  ───►
//	  ...
//	  ◄─── exec Outcome | error                the call's end
//
// The executor's host requests use ids from 1<<32 up, so they never collide
// with the broker's exec request id. The broker answers every host request
// before it reads the next one; a host request that is malformed, names a
// capability outside the call's grants, or comes when no Tier A call is
// running ends the call (capability_denied) and the connection.

// WasmSpec is what a Tier A call runs: a verified skill's tool, the module
// instrumented for fuel by the broker (its bytes travel as a sealed memfd
// with the exec request), the call's input and its grants.
type WasmSpec struct {
	// SkillID names the skill, for the executor's log. The release and
	// module that ran are the broker's to record, not the executor's.
	SkillID string `msgpack:"skill_id" json:"skill_id"`
	// Instrumented is the SHA-256 of the module bytes sent (after
	// instrumentation), checked against them, and against the module a
	// warm executor prepared.
	Instrumented string `msgpack:"instrumented" json:"instrumented"`
	Export       string `msgpack:"export" json:"export"`
	Input        []byte `msgpack:"input" json:"input"`
	Fuel         uint64 `msgpack:"fuel" json:"fuel"`
	MemoryPages  uint32 `msgpack:"memory_pages" json:"memory_pages"`
	MaxHostCalls int    `msgpack:"max_host_calls" json:"max_host_calls"`
	Grants       Grants `msgpack:"grants" json:"grants"`
	// CacheDir is the broker's compiled-code cache holding this module's
	// machine code, read-only for the executor; "" when the broker could
	// not precompile it (the executor then compiles).
	CacheDir string `msgpack:"cache_dir,omitempty" json:"cache_dir,omitempty"`
}

// Grants are the capabilities of one Tier A call: the intersection of the
// operator's configuration, the skill's approved manifest and the call.
// Secret values and HTTP are performed by the broker; the executor checks
// the grant first, the broker again.
type Grants struct {
	HTTP     []string `msgpack:"http" json:"http"`
	Secrets  []string `msgpack:"secrets" json:"secrets"`
	KV       bool     `msgpack:"kv" json:"kv"`
	Channels []string `msgpack:"channels" json:"channels"`
}

// WasmModule is a prepare request (broker → executor, KindPrepare, the
// module as a sealed memfd attached): the executor confines itself and
// compiles the module, answers KindPrepare, and then waits for its one
// call, whose spec must name the same instrumented module. This keeps
// warm Tier A executors per hot skill, each still serving exactly one call.
type WasmModule struct {
	Instrumented string `msgpack:"instrumented" json:"instrumented"`
	CacheDir     string `msgpack:"cache_dir,omitempty" json:"cache_dir,omitempty"`
}

// HostRequest is one capability use the executor forwards to the broker.
// Op is "http" (Name: the host; Data: the request JSON), "secret" (Name),
// or "kv_get", "kv_put", "kv_delete", "kv_list" (Key, Data: the value).
type HostRequest struct {
	Op   string `msgpack:"op" json:"op"`
	Name string `msgpack:"name,omitempty" json:"name,omitempty"`
	Key  []byte `msgpack:"key,omitempty" json:"key,omitempty"`
	Data []byte `msgpack:"data,omitempty" json:"data,omitempty"`
}

// HostResult answers a HostRequest: Code is 0 with Data, or one of the
// host ABI's negative error codes below (executor/wasm's Code values).
type HostResult struct {
	Code int64  `msgpack:"code" json:"code"`
	Data []byte `msgpack:"data,omitempty" json:"data,omitempty"`
}

// The host ABI's error codes, as a HostResult carries them.
const (
	HostDenied      int64 = -1 // the capability is not granted, or the address is refused
	HostNotFound    int64 = -2 // no such key or secret value
	HostQuota       int64 = -3 // a size or count limit
	HostInvalid     int64 = -4 // malformed arguments
	HostUnavailable int64 = -5 // the broker could not do it
)

// HostRequestIDBase is the first id of the executor's host requests.
const HostRequestIDBase = 1 << 32

// Frame caps of a Tier A call: a host request or its answer (an HTTP
// response of up to 4 MiB travels base64-encoded in JSON), and what an
// outcome carries beyond the output quota (channel messages, log lines).
const (
	HostFrameMax     = 8 << 20
	WasmOutcomeExtra = 2 << 20
)

// WasmReceipt is what a Tier A outcome adds: the fuel used and the
// schedule that counted it, the host calls made, the channel messages sent
// (returned to the agent) and the guest's log lines.
type WasmReceipt struct {
	FuelUsed     uint64       `msgpack:"fuel_used" json:"fuel_used"`
	FuelSchedule int          `msgpack:"fuel_schedule" json:"fuel_schedule"`
	HostCalls    int          `msgpack:"host_calls" json:"host_calls"`
	Messages     []ChannelMsg `msgpack:"messages,omitempty" json:"messages,omitempty"`
	Logs         []string     `msgpack:"logs,omitempty" json:"logs,omitempty"`
	Skill        string       `msgpack:"skill" json:"skill"`
	Statement    string       `msgpack:"statement" json:"statement"`
	Instrumented string       `msgpack:"instrumented" json:"instrumented"`
	// Resource names what ran out (status quota_exceeded): fuel, memory,
	// depth, host_calls, output; Trap how the guest trapped (status trap).
	Resource string `msgpack:"resource,omitempty" json:"resource,omitempty"`
	Trap     string `msgpack:"trap,omitempty" json:"trap,omitempty"`
}

// ChannelMsg is one channel_send of the guest.
type ChannelMsg struct {
	Channel string `msgpack:"channel" json:"channel"`
	Body    []byte `msgpack:"body" json:"body"`
}
