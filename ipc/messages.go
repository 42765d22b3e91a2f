package ipc

import "slices"

// Channel names the conversation a connection carries. The first message on
// every connection is a Hello naming it.
type Channel string

const (
	ChannelAgent    Channel = "agent"    // agent → broker, agent.sock
	ChannelVerifier Channel = "verifier" // broker → verifier, socketpair
	ChannelExec     Channel = "exec"     // broker → executor, socketpair
	ChannelAdmin    Channel = "admin"    // admin → verifier, admin.sock
)

// Kind is the type of a message. The reply to a request carries the request's
// id and either the same kind or KindError.
type Kind string

const (
	KindHello     Kind = "hello"
	KindError     Kind = "error"
	KindListTools Kind = "list_tools"
	KindCall      Kind = "call"
	KindStatus    Kind = "status"
	KindExec      Kind = "exec"
	// KindHost is a Tier A executor's request to the broker, during an
	// exec (see tiera.go): the reverse direction of the exec channel.
	KindHost Kind = "host"
	// KindPrepare readies a warm Tier A executor (see tiera.go).
	KindPrepare Kind = "prepare"

	// The verifier channel (broker → verifier).
	KindResolve Kind = "resolve"

	// The admin channel (admin CLI → verifier); bodies in verifier/admin.
	KindInstall        Kind = "install"
	KindList           Kind = "list"
	KindShow           Kind = "show"
	KindPromote        Kind = "promote"
	KindDisable        Kind = "disable"
	KindEnable         Kind = "enable"
	KindRemove         Kind = "remove"
	KindRevokeKey      Kind = "revoke_key"
	KindRevokeSkill    Kind = "revoke_skill"
	KindTrustList      Kind = "trust_list"
	KindImportRotation Kind = "import_rotation"
	KindDoctor         Kind = "doctor"
)

var kinds = []Kind{
	KindHello, KindError, KindListTools, KindCall, KindStatus, KindExec, KindHost, KindPrepare,
	KindResolve,
	KindInstall, KindList, KindShow, KindPromote, KindDisable, KindEnable, KindRemove,
	KindRevokeKey, KindRevokeSkill, KindTrustList, KindImportRotation, KindDoctor,
}

func (k Kind) valid() bool { return slices.Contains(kinds, k) }

// requests is the permit table: the request kinds a client may send on each
// channel after Hello. Anything else from the client closes the connection.
var requests = map[Channel][]Kind{
	ChannelAgent:    {KindListTools, KindCall, KindStatus},
	ChannelVerifier: {KindStatus, KindResolve},
	ChannelExec:     {KindExec, KindPrepare},
	ChannelAdmin: {
		KindStatus, KindInstall, KindList, KindShow, KindPromote, KindDisable, KindEnable,
		KindRemove, KindRevokeKey, KindRevokeSkill, KindTrustList, KindImportRotation, KindDoctor,
	},
}

// fdRequests says how many file descriptors (SCM_RIGHTS) travel with a
// request of each kind; every other request carries none, and a request
// with descriptors it should not have ends the connection.
var fdRequests = map[Kind]int{KindInstall: 2, KindExec: 1, KindPrepare: 1}

// FDs returns the number of descriptors a request of kind k carries.
func (k Kind) FDs() int { return fdRequests[k] }

// Permits reports whether a client may send kind on ch after Hello.
func (ch Channel) Permits(k Kind) bool { return slices.Contains(requests[ch], k) }

func (ch Channel) valid() bool { _, ok := requests[ch]; return ok }

// The conversation on every channel:
//
//	client                                  server
//	  hello{proto, version, channel} ───────►
//	                                 ◄─────── hello{proto, version, channel, software}
//	                                          | error{version_mismatch|denied|protocol}, close
//	  request{id, kind, body} ──────────────►
//	                                 ◄─────── reply{same id, same kind, body}
//	                                          | error{same id, class, message}
//	  ... one request at a time ...
//
// agent:    list_tools{} → list_tools{tools}; call{CallRequest} → call{Outcome};
//           status{} → status{Status}
// verifier: status{} → status{Status};
//           resolve{ResolveRequest} → resolve{Resolved} + one sealed memfd
//           per module (SCM_RIGHTS), in Resolved.Modules order
// admin:    status{} → status{Status}; install{} + 2 fds (archive, .sig) →
//           install{Release}; list, show, promote, disable, enable, remove,
//           revoke_key, revoke_skill, trust_list, import_rotation, doctor:
//           bodies in verifier/admin (see docs/PROTOCOL.md)
// exec:     exec{ExecSpec} → exec{Outcome}; the executor then exits.
//
// A request the channel does not permit, an undecodable frame, or a frame
// over the cap ends the connection.

// Hello opens every connection, in both directions.
type Hello struct {
	Proto    string  `msgpack:"proto" json:"proto"`
	Version  int     `msgpack:"version" json:"version"`
	Channel  Channel `msgpack:"channel" json:"channel"`
	Software string  `msgpack:"software,omitempty" json:"software,omitempty"`
}

// Empty is the body of requests that carry nothing (list_tools, status).
type Empty struct{}

// ToolList answers list_tools.
type ToolList struct {
	Tools []ToolInfo `msgpack:"tools" json:"tools"`
}

// ToolInfo describes one tool an agent may call.
type ToolInfo struct {
	Name        string `msgpack:"name" json:"name"`
	Kind        string `msgpack:"kind" json:"kind"`
	Description string `msgpack:"description,omitempty" json:"description,omitempty"`
	Tier        string `msgpack:"tier" json:"tier"`
	// Args says whether the call may append arguments to the tool's command.
	Args bool `msgpack:"args" json:"args"`
}

// CallRequest asks the broker to run one tool call.
type CallRequest struct {
	RunID string `msgpack:"run_id,omitempty" json:"run_id,omitempty"`
	Tool  string `msgpack:"tool" json:"tool"`
	// Args are appended to a process tool's configured command; for
	// process.run they are the whole command, Args[0] naming the program.
	Args []string `msgpack:"args,omitempty" json:"args,omitempty"`
	// Input is a JSON document for tools that take one (skills); process
	// tools refuse it.
	Input     string `msgpack:"input,omitempty" json:"input,omitempty"`
	Workspace string `msgpack:"workspace,omitempty" json:"workspace,omitempty"`
	TimeoutMS int64  `msgpack:"timeout_ms,omitempty" json:"timeout_ms,omitempty"`
	MaxOutput int64  `msgpack:"max_output,omitempty" json:"max_output,omitempty"`
	// Grants, for a skill's tool, narrow what the call may use to these
	// capabilities (the call's side of policy ∩ manifest ∩ call); absent,
	// the call asks for everything the other two allow. Process tools
	// refuse it.
	Grants *Grants `msgpack:"grants,omitempty" json:"grants,omitempty"`
}

// Status of a finished call.
type Status string

const (
	StatusOK            Status = "ok"             // exited 0
	StatusExited        Status = "exited"         // exited non-zero
	StatusSignaled      Status = "signaled"       // killed by a signal it did not get from us
	StatusTimedOut      Status = "timed_out"      // wall clock passed; killed
	StatusQuotaExceeded Status = "quota_exceeded" // output over quota or CPU limit; killed
	StatusTrap          Status = "trap"           // Tier A: the guest trapped (Wasm.Trap says how)
)

// Outcome is the result of a call: the executor fills what it saw, the broker
// adds the call's identity and its own timings, and the agent receives it.
type Outcome struct {
	CallID    string    `msgpack:"call_id" json:"call_id"`
	RunID     string    `msgpack:"run_id" json:"run_id"`
	Tool      string    `msgpack:"tool" json:"tool"`
	Tier      string    `msgpack:"tier" json:"tier"`
	Status    Status    `msgpack:"status" json:"status"`
	ExitCode  int       `msgpack:"exit_code" json:"exit_code"`
	Signal    string    `msgpack:"signal,omitempty" json:"signal,omitempty"`
	Stdout    []byte    `msgpack:"stdout" json:"stdout"`
	Stderr    []byte    `msgpack:"stderr" json:"stderr"`
	Truncated bool      `msgpack:"truncated" json:"truncated"`
	Usage     Usage     `msgpack:"usage" json:"usage"`
	Durations Durations `msgpack:"durations" json:"durations"`
	// Sandbox says which layers the executor actually enforced.
	Sandbox Receipt `msgpack:"sandbox" json:"sandbox"`
	// Artifact is the SHA-256 ("sha256:<hex>") of the program file the
	// executor ran, read just before it started the call.
	Artifact string `msgpack:"artifact,omitempty" json:"artifact,omitempty"`
	// Attestation is the call's signed record (docs/ATTESTATIONS.md).
	Attestation *Attestation `msgpack:"attestation,omitempty" json:"attestation,omitempty"`
	// Wasm is what a Tier A call adds: fuel, host calls, channel messages.
	Wasm *WasmReceipt `msgpack:"wasm,omitempty" json:"wasm,omitempty"`
}

// Attestation is a call's signed attestation (docs/ATTESTATIONS.md): the
// canonical encoding of its record and the broker attestation key's Ed25519
// signature over "stockade/attestation/v1\x00" || Record.
type Attestation struct {
	Record    []byte `msgpack:"record" json:"record"`
	Signature []byte `msgpack:"signature" json:"signature"`
}

// Receipt is the enforcement receipt of a call: what the executor actually
// applied, not what was asked. The attestation carries it.
type Receipt struct {
	Tier string `msgpack:"tier" json:"tier"`
	// Backend is "native" (Tier B, or Tier C without namespaces) or "bwrap".
	Backend string `msgpack:"backend" json:"backend"`
	// LandlockABI is the Landlock ABI enforced, 0 when none.
	LandlockABI int `msgpack:"landlock_abi" json:"landlock_abi"`
	// Seccomp names the profile installed and the digest of its program.
	Seccomp       string `msgpack:"seccomp" json:"seccomp"`
	SeccompDigest string `msgpack:"seccomp_digest" json:"seccomp_digest"`
	// Namespaces lists the namespaces the target runs in (bwrap).
	Namespaces []string `msgpack:"namespaces" json:"namespaces"`
	// BwrapVersion is bubblewrap's version when it was used.
	BwrapVersion string `msgpack:"bwrap_version,omitempty" json:"bwrap_version,omitempty"`
	// Cgroup is the call's cgroup, when the host allowed one.
	Cgroup string `msgpack:"cgroup,omitempty" json:"cgroup,omitempty"`
	// Layers lists every other layer: rlimits, no_new_privs, cleared_env, ...
	Layers []string `msgpack:"layers" json:"layers"`
}

// Usage is what the target consumed, from wait4's rusage.
type Usage struct {
	UserMicros   int64 `msgpack:"user_us" json:"user_us"`
	SystemMicros int64 `msgpack:"system_us" json:"system_us"`
	MaxRSSKiB    int64 `msgpack:"max_rss_kib" json:"max_rss_kib"`
}

// Durations of a call's phases, in microseconds.
type Durations struct {
	// Total is from the broker receiving the call to the outcome.
	Total int64 `msgpack:"total_us" json:"total_us"`
	// Spawn is the supervisor's fork and exec of the executor.
	Spawn int64 `msgpack:"spawn_us" json:"spawn_us"`
	// Run is from the executor starting the target to the target's end.
	Run int64 `msgpack:"run_us" json:"run_us"`
}

// ExecSpec is everything an executor needs for one call. The broker builds it
// from the tool's configuration and the checked request; the executor trusts
// it (it flows down the trust gradient) and applies it exactly.
type ExecSpec struct {
	CallID string `msgpack:"call_id" json:"call_id"`
	// Path is the absolute path of the program; Argv[0] is its name.
	Path string   `msgpack:"path" json:"path"`
	Argv []string `msgpack:"argv" json:"argv"`
	// Env is the target's whole environment, already filtered by the broker.
	Env       []string `msgpack:"env" json:"env"`
	Dir       string   `msgpack:"dir" json:"dir"`
	Tier      string   `msgpack:"tier" json:"tier"`
	TimeoutMS int64    `msgpack:"timeout_ms" json:"timeout_ms"`
	MaxOutput int64    `msgpack:"max_output" json:"max_output"`
	Limits    Rlimits  `msgpack:"limits" json:"limits"`
	// Egress allows the network. Without it seccomp refuses every socket
	// but AF_UNIX (both tiers), Landlock denies TCP (Tier C, ABI 4+), and
	// bwrap gives the target an empty network namespace.
	Egress bool `msgpack:"egress" json:"egress"`
	// Sandbox is what Tier C adds; nil in Tier B.
	Sandbox *SandboxSpec `msgpack:"sandbox,omitempty" json:"sandbox,omitempty"`
	// Wasm is a Tier A call (Tier "A"); Path, Argv and Dir are then empty.
	Wasm *WasmSpec `msgpack:"wasm,omitempty" json:"wasm,omitempty"`
	// Scratch, in multi-uid mode, is the call's own directory, which the
	// executor makes (0700, as its uid) before the target starts and
	// removes after: Dir and the target's TMPDIR are inside it. It must be
	// a direct child of the executor's scratch root.
	Scratch string `msgpack:"scratch,omitempty" json:"scratch,omitempty"`
}

// SandboxSpec is Tier C's isolation for one call. Paths are absolute and
// resolved by the broker; the executor applies them as given.
type SandboxSpec struct {
	// MinLandlockABI is the lowest Landlock ABI the call accepts; a host
	// below it refuses the call (sandbox_unavailable), never runs it weaker.
	MinLandlockABI int `msgpack:"min_landlock_abi" json:"min_landlock_abi"`
	// ReadOnly and ReadWrite list what the target may read (and execute) and
	// what it may also write: directories and files.
	ReadOnly  []string `msgpack:"read_only" json:"read_only"`
	ReadWrite []string `msgpack:"read_write" json:"read_write"`
	// Bwrap is "required" (run the target under bubblewrap, or refuse the
	// call) or "off". The broker resolves a tool's "auto" by probing bwrap.
	Bwrap string `msgpack:"bwrap" json:"bwrap"`
	// AllowHardlinks skips the executor's check that a writable workspace
	// holds no hardlinked file.
	AllowHardlinks bool `msgpack:"allow_hardlinks,omitempty" json:"allow_hardlinks,omitempty"`
	// BwrapVersion is the version the broker's probe found.
	BwrapVersion string `msgpack:"bwrap_version,omitempty" json:"bwrap_version,omitempty"`
}

// Rlimits are the limits the executor sets on the target: rlimits (hard and
// soft alike; core dumps always off) and, where the host allows, cgroup
// limits.
type Rlimits struct {
	CPUSeconds   uint64 `msgpack:"cpu_s" json:"cpu_s"`
	AddressSpace uint64 `msgpack:"as_bytes" json:"as_bytes"`
	NoFile       uint64 `msgpack:"nofile" json:"nofile"`
	NProc        uint64 `msgpack:"nproc" json:"nproc"`
	FileSize     uint64 `msgpack:"fsize_bytes" json:"fsize_bytes"`
	// Pids and Memory are the call's cgroup limits (pids.max, the memory
	// limit in bytes), applied where the host gives the executor a cgroup.
	Pids   uint64 `msgpack:"pids" json:"pids"`
	Memory uint64 `msgpack:"memory_bytes" json:"memory_bytes"`
}

// RoleStatus answers status on the verifier and admin channels, and is part of
// the broker's answer to agents.
type RoleStatus struct {
	Role     string `msgpack:"role" json:"role"`
	Software string `msgpack:"software" json:"software"`
	PID      int    `msgpack:"pid" json:"pid"`
	UptimeMS int64  `msgpack:"uptime_ms" json:"uptime_ms"`
}

// BrokerStatus answers status on the agent channel.
type BrokerStatus struct {
	Broker   RoleStatus `msgpack:"broker" json:"broker"`
	Verifier RoleStatus `msgpack:"verifier" json:"verifier"`
	Mode     string     `msgpack:"mode" json:"mode"`
	Tools    int        `msgpack:"tools" json:"tools"`
	Calls    uint64     `msgpack:"calls" json:"calls"`
	Tiers    []string   `msgpack:"tiers" json:"tiers"`
	PeerUID  uint32     `msgpack:"peer_uid" json:"peer_uid"`
	// Host is what this host gives native calls, as the broker found it at
	// start-up; each outcome's receipt says what one call got.
	Host HostSandbox `msgpack:"host" json:"host"`
	// AttestationKey is the broker's attestation public key (hex), with
	// which every call's record can be verified offline.
	AttestationKey string `msgpack:"attestation_key" json:"attestation_key"`
}

// HostSandbox describes the sandboxing layers a host offers.
type HostSandbox struct {
	LandlockABI  int    `msgpack:"landlock_abi" json:"landlock_abi"`
	BwrapVersion string `msgpack:"bwrap_version" json:"bwrap_version"`
	// BwrapProblem says why bwrap is not usable, when it is not.
	BwrapProblem string `msgpack:"bwrap_problem,omitempty" json:"bwrap_problem,omitempty"`
	// Seccomp lists the executor profiles as "name sha256:digest".
	Seccomp []string `msgpack:"seccomp" json:"seccomp"`
	// Cgroups says whether calls get a cgroup of their own here.
	Cgroups bool `msgpack:"cgroups" json:"cgroups"`
}
