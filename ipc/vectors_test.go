package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// updateGolden (-update) regenerates the golden files: the protocol vectors in
// testdata/ipc and the fuzz seed corpus in ipc/testdata/fuzz.
var updateGolden = flag.Bool("update", false, "rewrite testdata/ipc/*.hex and the fuzz seed corpus from the tables in the tests")

// vectorDir holds the language-neutral protocol vectors (see its README.md).
const vectorDir = "../testdata/ipc"

// Directions of a message on a connection.
const (
	dirRequest = "request" // client → server (the side that sends Hello first)
	dirReply   = "reply"   // server → client
)

// Where a bad vector is refused.
const (
	stageFrame    = "frame"    // ReadFrame: the length prefix
	stageEnvelope = "envelope" // DecodeEnvelope: the walk, strict decoding, version, kind
	stageBody     = "body"     // Message.Decode into the kind's type
)

// Expectations, as written in a vector's header.
const (
	expectOK              = "ok"
	expectMalformed       = "malformed"
	expectFrameTooLarge   = "frame_too_large"
	expectVersionMismatch = "version_mismatch"
)

// protoVector is one protocol test vector. Good vectors (frame nil) are encoded by
// the real encoder, EncodeEnvelope and AppendFrame, so each is byte for byte
// what Stockade sends. Bad vectors carry their frame.
type protoVector struct {
	name, desc string
	ch         Channel
	dir        string
	id         uint64
	kind       Kind
	body       any // the message, for good vectors
	frame      []byte
	stage      string // for bad vectors
	expect     string
}

// encodeFrame returns the whole frame of v: what goes on the wire.
func (v protoVector) encodeFrame() ([]byte, error) {
	if v.frame != nil {
		return v.frame, nil
	}
	b, err := EncodeEnvelope(v.id, v.kind, v.body)
	if err != nil {
		return nil, err
	}
	return AppendFrame(nil, b), nil
}

// Values shared by the vectors: one call of process.run, end to end.
const (
	vecCallID    = "5f0c9a1e7b3d42a8c6e1f093"
	vecRunID     = "run-42"
	vecWorkspace = "/home/agent/project"
)

const vecTmp = "/home/agent/.local/state/stockade/work/" + vecCallID + "/tmp"

// vecReceipt is what an executor enforced for a Tier C call without egress
// on a host with Landlock ABI 6 and a usable bubblewrap.
var vecReceipt = Receipt{
	Tier: "C", Backend: "bwrap", LandlockABI: 6,
	Seccomp: "executor-nonet", SeccompDigest: "sha256:9c1f0e7a52d8b3146e0f2a9d7c5b8e31f4a6d2c09b7e18f3a5c4d6e2b0f19a87",
	Namespaces:   []string{"user", "pid", "ipc", "uts", "cgroup", "mount", "net"},
	BwrapVersion: "0.8.0",
	Layers:       []string{"rlimits", "no_new_privs", "cleared_env", "own_session", "subreaper", "closed_fds", "landlock"},
}

var vecExecOutcome = Outcome{
	Status: StatusOK, ExitCode: 0, Stdout: []byte("hello\n"),
	Usage:     Usage{UserMicros: 612, SystemMicros: 1024, MaxRSSKiB: 1880},
	Durations: Durations{Run: 1830},
	Sandbox:   vecReceipt,
}

func vecCallOutcome() Outcome {
	o := vecExecOutcome
	o.CallID, o.RunID, o.Tool, o.Tier = vecCallID, vecRunID, "process.run", "C"
	o.Durations.Spawn, o.Durations.Total = 2417, 6120
	return o
}

// vecExecSpec is the broker's spec for call-request under the default
// isolation (Tier C, no egress, bwrap "auto") on a host where the broker's
// probe found a usable bubblewrap, so "auto" became "required".
func vecExecSpec() ExecSpec {
	return ExecSpec{
		CallID: vecCallID, Path: "/usr/bin/echo", Argv: []string{"/bin/echo", "hello"},
		Env: []string{
			"HOME=" + vecWorkspace, "LANG=C", "LC_ALL=C",
			"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "TMPDIR=" + vecTmp,
		},
		Dir: vecWorkspace, Tier: "C", TimeoutMS: 5000, MaxOutput: 1 << 20,
		Limits: Rlimits{
			CPUSeconds: 30, AddressSpace: 4 << 30, NoFile: 256, NProc: 1024, FileSize: 64 << 20,
			Pids: 256, Memory: 1 << 30,
		},
		Egress: false,
		Sandbox: &SandboxSpec{
			MinLandlockABI: 6,
			ReadOnly: []string{
				"/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64",
				"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
				"/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/alternatives",
				"/proc", "/dev/zero", "/dev/urandom", "/dev/random", "/usr/bin/echo",
			},
			ReadWrite:    []string{vecTmp, "/dev/null", "/dev/full", vecWorkspace},
			Bwrap:        "required",
			BwrapVersion: "0.8.0",
		},
	}
}

// vecExecSpecTierB is the same call for a tool configured with tier = "B":
// no sandbox field at all.
func vecExecSpecTierB() ExecSpec {
	s := vecExecSpec()
	s.Tier, s.Sandbox = "B", nil
	return s
}

// vecResolved is the hello skill of testdata/skills as resolve returns it.
func vecResolved() Resolved {
	return Resolved{
		ID: "stockade.hello", Version: "1.0.0", Sequence: 1,
		Digest:    "sha256:6b8f3c2e0f5d1a4b9c7e8d2f1a0b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
		Publisher: "ed25519:SHA256:mqCUKl8F_n-ztlDppR6x9JUXJ9zSuYtfin-vCe79xdc",
		Manifest: SkillManifest{
			Name: "Hello", Publisher: "Stockade tests", Description: "Answers 42.",
			Tools: []SkillTool{{
				Name: "hello", Module: "modules/hello.wasm", Export: "hello", Description: "Returns 42.",
				InputSchema:  `{"type":"object","properties":{},"additionalProperties":false}`,
				OutputSchema: `{"type":"integer"}`,
			}},
			Capabilities: Capabilities{HTTP: []string{"api.example.com"}, Secrets: []string{"greeting_token"}, Channels: []string{"notify"}},
			Limits:       SkillLimits{Fuel: 1_000_000, MemoryBytes: 1 << 20, TimeoutMS: 2000},
		},
		Modules: []ResolvedModule{{
			Path: "modules/hello.wasm", Size: 38, MemoryLimitPages: 1024,
			SHA256: "sha256:0c1d2e3f405162738495a6b7c8d9eaf0b1c2d3e4f5061728394a5b6c7d8e9f0a",
		}},
	}
}

// rawEnvelope encodes an envelope around body bytes taken as they are.
func rawEnvelope(v int, id uint64, kind Kind, body []byte) []byte {
	b, err := Marshal(outEnvelope{V: v, ID: id, Kind: kind, Body: msgpack.RawMessage(body)})
	if err != nil {
		panic(err)
	}
	return b
}

func concatBytes(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// mp returns the msgpack encoding of v, for building bad bodies.
func mustMarshal(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// protoVectors is the table the files in testdata/ipc are generated from. It also
// seeds the fuzz targets (fuzz_test.go).
var protoVectors = []protoVector{
	// Hello, each channel: the client's, then the server's answer.
	{name: "hello-agent", desc: "An agent opens agent.sock: its Hello (id 0) is the first frame of the connection.",
		ch: ChannelAgent, dir: dirRequest, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAgent, Software: "stockade-client"}},
	{name: "hello-agent-reply", desc: "The broker's Hello in answer: same id, same channel.",
		ch: ChannelAgent, dir: dirReply, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAgent, Software: "stockade-broker"}},
	{name: "hello-admin", desc: "The admin CLI opens admin.sock.",
		ch: ChannelAdmin, dir: dirRequest, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAdmin, Software: "stockade-verifier-cli"}},
	{name: "hello-admin-reply", desc: "The verifier's Hello on admin.sock.",
		ch: ChannelAdmin, dir: dirReply, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAdmin, Software: "stockade-verifier"}},
	{name: "hello-verifier", desc: "The broker opens its socketpair to the verifier.",
		ch: ChannelVerifier, dir: dirRequest, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelVerifier, Software: "stockade-broker"}},
	{name: "hello-verifier-reply", desc: "The verifier's Hello to the broker.",
		ch: ChannelVerifier, dir: dirReply, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelVerifier, Software: "stockade-verifier"}},
	{name: "hello-exec", desc: "The broker opens the socketpair of a fresh executor.",
		ch: ChannelExec, dir: dirRequest, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelExec, Software: "stockade-broker"}},
	{name: "hello-exec-reply", desc: "The executor's Hello to the broker.",
		ch: ChannelExec, dir: dirReply, id: 0, kind: KindHello,
		body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelExec, Software: "stockade-exec"}},

	// The agent channel.
	{name: "list-tools-request", desc: "An agent lists the tools: the body is an empty map.",
		ch: ChannelAgent, dir: dirRequest, id: 1, kind: KindListTools, body: Empty{}},
	{name: "list-tools-reply", desc: "The broker's tools under the embedded default configuration.",
		ch: ChannelAgent, dir: dirReply, id: 1, kind: KindListTools, body: ToolList{Tools: []ToolInfo{
			{Name: "process.run", Kind: "process", Tier: "B", Args: true,
				Description: "Run an ad-hoc command: args[0] is an absolute path or a name on the system PATH"},
			{Name: "echo", Kind: "process", Description: "Print the arguments", Tier: "C", Args: true},
			{Name: "date", Kind: "process", Description: "Print the date in UTC", Tier: "C", Args: false},
		}}},
	{name: "call-request", desc: "An agent runs /bin/echo hello with process.run, in its workspace, with a 5 s timeout.",
		ch: ChannelAgent, dir: dirRequest, id: 2, kind: KindCall, body: CallRequest{
			RunID: vecRunID, Tool: "process.run", Args: []string{"/bin/echo", "hello"},
			Workspace: vecWorkspace, TimeoutMS: 5000,
		}},
	{name: "call-reply", desc: "The broker's reply: the executor's outcome with the call's identity and timings; stdout is bin, an empty stderr is nil.",
		ch: ChannelAgent, dir: dirReply, id: 2, kind: KindCall, body: vecCallOutcome()},
	{name: "call-error-denied", desc: "A call refused by policy: an error reply with the request's id and the deciding policy ids.",
		ch: ChannelAgent, dir: dirReply, id: 2, kind: KindError,
		body: Error{Class: ClassDenied, Message: "process.run is not allowed for this agent", Policies: []string{"forbid-process-run"}}},
	{name: "status-request", desc: "An agent asks for status.",
		ch: ChannelAgent, dir: dirRequest, id: 3, kind: KindStatus, body: Empty{}},
	{name: "status-reply", desc: "The broker's status, with the verifier's.",
		ch: ChannelAgent, dir: dirReply, id: 3, kind: KindStatus, body: BrokerStatus{
			Broker:   RoleStatus{Role: "broker", Software: "stockade-broker", PID: 4242, UptimeMS: 86400123},
			Verifier: RoleStatus{Role: "verifier", Software: "stockade-verifier", PID: 4243, UptimeMS: 86400087},
			Mode:     "single-user", Tools: 3, Calls: 7, Tiers: []string{"B", "C/landlock", "C/bwrap"}, PeerUID: 1000,
		}},
	{name: "error-denied", desc: "A peer whose uid may not use the socket: sent with id 0 before the client's Hello is read, then the connection closes.",
		ch: ChannelAgent, dir: dirReply, id: 0, kind: KindError,
		body: Error{Class: ClassDenied, Message: "uid 1001 may not call this broker"}},
	{name: "error-version-mismatch", desc: "The server's answer to a Hello for another protocol, version or channel; then it closes.",
		ch: ChannelAgent, dir: dirReply, id: 0, kind: KindError,
		body: Error{Class: ClassVersionMismatch, Message: `this is stockade v1 channel "agent"`}},

	// The admin channel.
	{name: "admin-status-request", desc: "The admin CLI asks the verifier for status.",
		ch: ChannelAdmin, dir: dirRequest, id: 1, kind: KindStatus, body: Empty{}},
	{name: "admin-status-reply", desc: "The verifier's status.",
		ch: ChannelAdmin, dir: dirReply, id: 1, kind: KindStatus,
		body: RoleStatus{Role: "verifier", Software: "stockade-verifier", PID: 4243, UptimeMS: 3600042}},

	// Tier A on the exec channel (internal: broker ↔ executor).
	{name: "exec-prepare", desc: "The broker readies a warm Tier A executor; the instrumented module travels in a sealed memfd attached to this frame.",
		ch: ChannelExec, dir: dirRequest, id: 1, kind: KindPrepare,
		body: WasmModule{Instrumented: "sha256:" + strings.Repeat("ab", 32)}},
	{name: "exec-tier-a", desc: "A Tier A call: the skill's tool, its input, limits and grants (the module was prepared, or is attached).",
		ch: ChannelExec, dir: dirRequest, id: 2, kind: KindExec,
		body: ExecSpec{CallID: "c0ffee", Tier: "A", TimeoutMS: 5000, MaxOutput: 1 << 20, Wasm: &WasmSpec{
			SkillID: "stockade.probe", Instrumented: "sha256:" + strings.Repeat("ab", 32), Export: "echo", Input: []byte(`{"x":1}`), Fuel: 10_000_000, MemoryPages: 512, MaxHostCalls: 1000,
			Grants: Grants{HTTP: []string{"127.0.0.1"}, Secrets: []string{"token"}, KV: true, Channels: []string{"notify"}},
		}}},
	{name: "host-request-kv-get", desc: "The executor forwards the guest's kv_get to the broker (ids from 1<<32).",
		ch: ChannelExec, dir: dirReply, id: HostRequestIDBase + 1, kind: KindHost, body: HostRequest{Op: "kv_get", Key: []byte("k")}},
	{name: "host-result-not-found", desc: "The broker's answer: the host ABI's ErrNotFound.",
		ch: ChannelExec, dir: dirRequest, id: HostRequestIDBase + 1, kind: KindHost, body: HostResult{Code: -2}},

	// The verifier channel (internal: broker ↔ verifier).
	{name: "resolve-request", desc: "The broker asks for the active release of a skill (version omitted: whichever is active).",
		ch: ChannelVerifier, dir: dirRequest, id: 7, kind: KindResolve, body: ResolveRequest{ID: "stockade.hello"}},
	{name: "resolve-reply", desc: "The verifier's answer: the release, its manifest and its module; the module's bytes travel in a sealed memfd attached (SCM_RIGHTS) to this frame.",
		ch: ChannelVerifier, dir: dirReply, id: 7, kind: KindResolve, body: vecResolved()},
	{name: "resolve-error-revoked", desc: "A resolve refused because the release's key was revoked: the class says denied, the reason says why.",
		ch: ChannelVerifier, dir: dirReply, id: 8, kind: KindError,
		body: Error{Class: ClassDenied, Reason: ReasonRevoked, Message: "trust: key_revoked \"stockade.hello\": its key is revoked"}},
	{name: "admin-error-rollback", desc: "An install refused on admin.sock: a sequence below the skill's high-water mark.",
		ch: ChannelAdmin, dir: dirReply, id: 4, kind: KindError,
		body: Error{Class: ClassDenied, Reason: ReasonRollback, Message: "trust: rollback \"stockade.hello@1.0.0\": sequence 1 is below 2"}},

	// The exec channel (internal: broker ↔ executor).
	{name: "exec-request", desc: "The broker's spec for the call of call-request, as it builds it for Tier C without egress.",
		ch: ChannelExec, dir: dirRequest, id: 1, kind: KindExec, body: vecExecSpec()},
	{name: "exec-request-tier-b", desc: "The same call for a Tier B tool: no sandbox field.",
		ch: ChannelExec, dir: dirRequest, id: 1, kind: KindExec, body: vecExecSpecTierB()},
	{name: "exec-reply", desc: "The executor's outcome: what it saw and the receipt of what it enforced; the broker adds the call's identity.",
		ch: ChannelExec, dir: dirReply, id: 1, kind: KindExec, body: vecExecOutcome},

	// Bad frames: each must be refused, and the connection closed.
	{name: "bad-array32-bomb", desc: "A body of the 5 bytes dd ff ff ff ff: an array32 claiming 4294967295 elements.",
		frame: AppendFrame(nil, []byte{0xdd, 0xff, 0xff, 0xff, 0xff}), stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-array32-bomb-in-body", desc: "A call whose body is an array32 claiming 4294967295 elements.",
		frame: AppendFrame(nil, rawEnvelope(1, 2, KindCall, []byte{0xdd, 0xff, 0xff, 0xff, 0xff})), stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-map32-bomb", desc: "A call whose body is a map32 claiming 4294967295 entries.",
		frame: AppendFrame(nil, rawEnvelope(1, 2, KindCall, []byte{0xdf, 0xff, 0xff, 0xff, 0xff})), stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-str32-past-end", desc: "A call whose tool is a str32 claiming 65536 bytes where 11 remain.",
		frame: AppendFrame(nil, rawEnvelope(1, 2, KindCall, concatBytes([]byte{0x81}, mustMarshal("tool"), []byte{0xdb, 0, 1, 0, 0}, []byte("process.run")))),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-bin32-past-end", desc: "A call reply whose stdout is a bin32 claiming 4294967295 bytes.",
		frame: AppendFrame(nil, rawEnvelope(1, 2, KindCall, concatBytes([]byte{0x81}, mustMarshal("stdout"), []byte{0xc6, 0xff, 0xff, 0xff, 0xff}, []byte("hi")))),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-nesting-33", desc: "A body of 32 nested arrays inside the envelope map: depth 33, one over the limit.",
		frame: AppendFrame(nil, rawEnvelope(1, 2, KindCall, append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0))),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-trailing-byte", desc: "The agent's Hello followed by one byte (nil) inside the same frame.",
		frame: AppendFrame(nil, append(mustMarshal(outEnvelope{V: 1, ID: 0, Kind: KindHello,
			Body: Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAgent}}), 0xc0)),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-ext-type", desc: "A status request whose body is an extension value (fixext4 type -1, a msgpack timestamp).",
		frame: AppendFrame(nil, rawEnvelope(1, 3, KindStatus, []byte{0xd6, 0xff, 0x65, 0x5f, 0x00, 0x00})),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-reserved-byte", desc: "A status request whose body is the reserved byte c1.",
		frame: AppendFrame(nil, rawEnvelope(1, 3, KindStatus, []byte{0xc1})), stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-version-2", desc: "A well-formed status request of protocol version 2.",
		frame: AppendFrame(nil, mustMarshal(outEnvelope{V: 2, ID: 3, Kind: KindStatus, Body: Empty{}})),
		stage: stageEnvelope, expect: expectVersionMismatch},
	{name: "bad-version-missing", desc: "An envelope without v: a missing field is its zero value, so this is version 0.",
		frame: AppendFrame(nil, mustMarshal(struct {
			ID   uint64 `msgpack:"id"`
			Kind Kind   `msgpack:"kind"`
			Body Empty  `msgpack:"body"`
		}{ID: 3, Kind: KindStatus})),
		stage: stageEnvelope, expect: expectVersionMismatch},
	{name: "bad-unknown-kind", desc: "A well-formed envelope of a kind outside the closed set.",
		frame: AppendFrame(nil, mustMarshal(outEnvelope{V: 1, ID: 4, Kind: "launch", Body: Empty{}})),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-unknown-envelope-field", desc: "An envelope with a field beyond v, id, kind and body.",
		frame: AppendFrame(nil, mustMarshal(struct {
			outEnvelope `msgpack:",inline"`
			UID         uint32 `msgpack:"uid"`
		}{outEnvelope{V: 1, ID: 3, Kind: KindStatus, Body: Empty{}}, 0})),
		stage: stageEnvelope, expect: expectMalformed},
	{name: "bad-unknown-field", desc: "A call request with a field CallRequest does not have.",
		ch: ChannelAgent, dir: dirRequest, id: 2, kind: KindCall,
		frame: AppendFrame(nil, mustMarshal(outEnvelope{V: 1, ID: 2, Kind: KindCall, Body: struct {
			CallRequest `msgpack:",inline"`
			Sudo        bool `msgpack:"sudo"`
		}{CallRequest{Tool: "process.run", Args: []string{"/bin/id"}}, true}})),
		stage: stageBody, expect: expectMalformed},
	{name: "bad-missing-body", desc: "A list_tools request without a body field: the envelope decodes, the body does not.",
		ch: ChannelAgent, dir: dirRequest, id: 1, kind: KindListTools,
		frame: AppendFrame(nil, mustMarshal(struct {
			V    int    `msgpack:"v"`
			ID   uint64 `msgpack:"id"`
			Kind Kind   `msgpack:"kind"`
		}{V: 1, ID: 1, Kind: KindListTools})),
		stage: stageBody, expect: expectMalformed},
	{name: "bad-frame-over-64k", desc: "A length prefix of 65537 (one over the control cap); nothing after it is read.",
		frame: []byte{0x00, 0x01, 0x00, 0x01}, stage: stageFrame, expect: expectFrameTooLarge},
	{name: "bad-zero-length", desc: "A length prefix of zero.",
		frame: []byte{0x00, 0x00, 0x00, 0x00}, stage: stageFrame, expect: expectMalformed},
}

// bodyType is the Go type of a message body: fixed by the channel, the
// direction and the kind. It reports false for a combination no peer sends.
func bodyType(ch Channel, dir string, k Kind) (reflect.Type, bool) {
	var v any
	switch {
	case k == KindHello:
		v = Hello{}
	case k == KindError && dir == dirReply:
		v = Error{}
	// A Tier A executor's host requests run against the channel's
	// direction: the executor asks (vectors say "reply": executor →
	// broker), the broker answers ("request": broker → executor).
	case ch == ChannelExec && k == KindHost && dir == dirReply:
		v = HostRequest{}
	case ch == ChannelExec && k == KindHost && dir == dirRequest:
		v = HostResult{}
	case ch == ChannelExec && k == KindPrepare && dir == dirRequest:
		v = WasmModule{}
	case ch == ChannelExec && k == KindPrepare && dir == dirReply:
		v = Empty{}
	case dir == dirRequest && ch.Permits(k):
		switch k {
		case KindListTools, KindStatus:
			v = Empty{}
		case KindCall:
			v = CallRequest{}
		case KindExec:
			v = ExecSpec{}
		case KindResolve:
			v = ResolveRequest{}
		}
	case dir == dirReply && ch.Permits(k):
		switch k {
		case KindListTools:
			v = ToolList{}
		case KindCall, KindExec:
			v = Outcome{}
		case KindResolve:
			v = Resolved{}
		case KindStatus:
			if ch == ChannelAgent {
				v = BrokerStatus{}
			} else {
				v = RoleStatus{}
			}
		}
	}
	if v == nil {
		return nil, false
	}
	return reflect.TypeOf(v), true
}

// renderVector writes a vector file: header lines, then the frame in hex.
func renderVector(v protoVector) ([]byte, error) {
	frame, err := v.encodeFrame()
	if err != nil {
		return nil, err
	}
	expect := v.expect
	if v.frame == nil {
		expect = expectOK
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# name: %s\n", v.name)
	fmt.Fprintf(&b, "# description: %s\n", v.desc)
	if v.ch != "" {
		fmt.Fprintf(&b, "# channel: %s\n", v.ch)
		fmt.Fprintf(&b, "# direction: %s\n", v.dir)
	}
	if expect != expectOK {
		fmt.Fprintf(&b, "# stage: %s\n", v.stage)
	}
	fmt.Fprintf(&b, "# expect: %s\n", expect)
	if v.kind != "" {
		fmt.Fprintf(&b, "# id: %d\n", v.id)
		fmt.Fprintf(&b, "# kind: %s\n", v.kind)
		typ, ok := bodyType(v.ch, v.dir, v.kind)
		if !ok {
			return nil, fmt.Errorf("%s: no body type for %s %s on %s", v.name, v.dir, v.kind, v.ch)
		}
		fmt.Fprintf(&b, "# type: %s\n", typ.Name())
		if expect == expectOK {
			// The JSON is of the decoded body: what a receiver sees.
			m, err := DecodeEnvelope(frame[frameHeader:])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
			p := reflect.New(typ)
			if err := m.Decode(p.Interface()); err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
			j, err := json.Marshal(p.Interface())
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "# body: %s\n", j)
		}
	}
	h := hex.EncodeToString(frame)
	for len(h) > 64 {
		b.WriteString(h[:64] + "\n")
		h = h[64:]
	}
	b.WriteString(h + "\n")
	return b.Bytes(), nil
}

// vectorFile is a parsed vector file.
type vectorFile struct {
	header map[string]string
	frame  []byte
}

func parseVector(data []byte) (*vectorFile, error) {
	vf := &vectorFile{header: map[string]string{}}
	var hx strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			k, v, ok := strings.Cut(strings.TrimSpace(line[1:]), ":")
			if ok && !strings.Contains(k, " ") {
				vf.header[k] = strings.TrimSpace(v)
			}
		default:
			hx.WriteString(line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	frame, err := hex.DecodeString(hx.String())
	if err != nil {
		return nil, err
	}
	vf.frame = frame
	for _, k := range []string{"name", "expect"} {
		if vf.header[k] == "" {
			return nil, fmt.Errorf("no %q header", k)
		}
	}
	return vf, nil
}

// TestVectors checks every protocol vector in testdata/ipc against the
// decoder, and the vectors of the table against the files, so that the files
// stay what Stockade actually sends. After a deliberate change to the wire
// format, regenerate them with
//
//	go test ./ipc -run TestVectors -update
//
// and review the diff: every changed file is a change other implementations
// must follow. The fuzz seed corpus is drawn from the same table; regenerate
// both at once with
//
//	go test ./ipc -run 'TestVectors|TestFuzzSeedCorpus' -update
func TestVectors(t *testing.T) {
	if *updateGolden {
		for _, v := range protoVectors {
			data, err := renderVector(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(vectorDir, v.name+".hex"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("golden", func(t *testing.T) {
		for _, v := range protoVectors {
			want, err := renderVector(v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(vectorDir, v.name+".hex"))
			if err != nil {
				t.Errorf("%v (regenerate: go test ./ipc -run TestVectors -update)", err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s.hex differs from what the encoder produces now (regenerate: go test ./ipc -run TestVectors -update)\ngot:\n%s\nwant:\n%s", v.name, got, want)
			}
		}
	})
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.hex"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(protoVectors) {
		t.Errorf("%d vector files for %d vectors", len(files), len(protoVectors))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".hex"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			vf, err := parseVector(data)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			checkVector(t, vf)
		})
	}
}

// checkVector runs a vector through the receiving side: ReadFrame with the
// control cap, DecodeEnvelope, and Decode into the type that the channel,
// direction and kind name.
func checkVector(t *testing.T, vf *vectorFile) {
	h := vf.header
	expect, stage := h["expect"], h["stage"]
	switch expect {
	case expectOK:
		if stage != "" {
			t.Fatalf("an ok vector has a stage")
		}
	case expectMalformed, expectFrameTooLarge, expectVersionMismatch:
		if stage != stageFrame && stage != stageEnvelope && stage != stageBody {
			t.Fatalf("stage %q", stage)
		}
	default:
		t.Fatalf("expect %q", expect)
	}
	// refused checks that err is what the vector expects at this stage.
	refused := func(at string, err error) bool {
		t.Helper()
		if err == nil {
			if stage == at {
				t.Fatalf("accepted at the %s stage; want %s", at, expect)
			}
			return false
		}
		if stage != at {
			t.Fatalf("refused at the %s stage (%v); want %s", at, err, firstNonEmpty(stage, "ok"))
		}
		var want error
		switch expect {
		case expectMalformed:
			want = ErrMalformed
		case expectFrameTooLarge:
			want = ErrFrameTooLarge
		case expectVersionMismatch:
			want = ErrVersionMismatch
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s stage: %v; want %s", at, err, expect)
		}
		return true
	}

	r := bytes.NewReader(vf.frame)
	body, err := ReadFrame(r, ControlFrameMax)
	if refused(stageFrame, err) {
		return
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes after the frame", r.Len())
	}
	if n := binary.BigEndian.Uint32(vf.frame); int(n) != len(body) {
		t.Fatalf("length prefix %d, body %d", n, len(body))
	}
	m, err := DecodeEnvelope(body)
	if refused(stageEnvelope, err) {
		return
	}
	if h["kind"] == "" {
		t.Fatalf("decoded, but the header names no kind to check")
	}
	if m.Kind != Kind(h["kind"]) {
		t.Fatalf("kind %q, header says %q", m.Kind, h["kind"])
	}
	if id, err := strconv.ParseUint(h["id"], 10, 64); err != nil || m.ID != id {
		t.Fatalf("id %d, header says %q", m.ID, h["id"])
	}
	typ, ok := bodyType(Channel(h["channel"]), h["direction"], m.Kind)
	if !ok {
		t.Fatalf("no body type for %s %s on channel %q", h["direction"], m.Kind, h["channel"])
	}
	if typ.Name() != h["type"] {
		t.Fatalf("type %s, header says %q", typ.Name(), h["type"])
	}
	p := reflect.New(typ)
	if refused(stageBody, m.Decode(p.Interface())) {
		return
	}
	j, err := json.Marshal(p.Interface())
	if err != nil {
		t.Fatal(err)
	}
	if string(j) != h["body"] {
		t.Fatalf("decoded body\n%s\nheader says\n%s", j, h["body"])
	}
	// What the receiver decoded, re-encoded, is the frame itself: the vector
	// is canonical.
	enc, err := EncodeEnvelope(m.ID, m.Kind, p.Elem().Interface())
	if err != nil {
		t.Fatal(err)
	}
	if again := AppendFrame(nil, enc); !bytes.Equal(again, vf.frame) {
		t.Fatalf("re-encoded frame differs:\n%x\n%x", again, vf.frame)
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
