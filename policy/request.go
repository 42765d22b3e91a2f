package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"
)

// Capability is something a call can do beyond running at all. Each is a
// Cedar action (a member of Action::"call") and a value of the Capability
// enum in the schema.
type Capability string

// The capabilities, in the schema's order.
const (
	ProcessExec    Capability = "process.exec"
	NetworkEgress  Capability = "network.egress"
	FSWrite        Capability = "fs.write"
	SecretsRead    Capability = "secrets.read"
	StorageWrite   Capability = "storage.write"
	ChannelSend    Capability = "channel.send"
	InterpreterRun Capability = "interpreter.run"
)

// Capabilities returns every capability, in the schema's order.
func Capabilities() []Capability {
	return []Capability{ProcessExec, NetworkEgress, FSWrite, SecretsRead, StorageWrite, ChannelSend, InterpreterRun}
}

// Tier names the sandbox that runs a call.
type Tier string

const (
	TierA Tier = "A" // WebAssembly skill
	TierB Tier = "B" // native process with rlimits
	TierC Tier = "C" // native process with Landlock, seccomp, namespaces or Seatbelt
)

// ToolKind says what a tool is.
type ToolKind string

const (
	KindProcess ToolKind = "process"
	KindSkill   ToolKind = "skill"
)

// Egress is a tool's egress mode.
type Egress string

const (
	EgressNone      Egress = "none"
	EgressPreflight Egress = "preflight"
	EgressStrict    Egress = "strict"
)

// Trust is a skill's state in the verifier's trust store.
type Trust string

const (
	TrustActive      Trust = "active"
	TrustQuarantined Trust = "quarantined"
	TrustRevoked     Trust = "revoked"
)

// Request is one tool call, as the broker knows it after checking it. It
// becomes one Cedar request per action ("call" and each of Actions) over the
// same principal, resource, entities and context. A Request that does not
// hold together (an unknown enum value, a skill tool without its Skill, a
// zero Path or Host, a negative counter) is denied, whatever the policies say.
type Request struct {
	// Principal is who calls: the broker resolves it from the peer's uid
	// through its configuration, never from the message.
	Principal Principal
	// Tool is the resource.
	Tool Tool
	// Skill is set exactly when Tool.Kind is KindSkill: the verifier's
	// approved view of the skill the tool belongs to.
	Skill *Skill
	// Actions are the capabilities this call exercises, beyond "call".
	Actions []Capability
	Context Context
}

// Principal is Agent::"<Name>", in Group::"<g>" for each of Groups.
type Principal struct {
	Name   string
	UID    uint32
	Groups []string
}

// Tool is Tool::"<Name>".
type Tool struct {
	Name         string
	Kind         ToolKind
	Tier         Tier // the tier the tool is configured for
	Capabilities []Capability
	Egress       Egress
}

// Skill is Skill::"<Publisher>/<Name>". Neither part may contain '/'.
type Skill struct {
	Publisher    string
	Name         string
	Version      string
	Trust        Trust
	Capabilities []Capability
}

// Context is what is true of this one call.
type Context struct {
	RunID string
	// CallsUsed counts the calls already permitted in this run.
	CallsUsed int64
	// Tier is the tier that will enforce this call.
	Tier Tier
	// EgressHosts are the destinations the call would reach: names go to
	// context.egress_hosts, IP literals to context.egress_ips.
	EgressHosts []Host
	// Workspace is the call's working directory; zero when it has none.
	Workspace Path
	// Paths are the path arguments. context.paths_in_workspace is true when
	// Workspace is set and every one of them is within it.
	Paths []Path
	// Program is the resolved program of a native call; zero for skills.
	Program Path
	// Argv is the full argument vector of a native call; only its digest
	// (ArgvDigest) reaches Cedar. No argument may contain NUL.
	Argv []string
	// Now is when the call is decided; context.time_of_day is taken in
	// Now's location. It must be set.
	Now    time.Time
	Budget Budget
}

// Budget holds the broker's counters as they stand before this call. A zero
// maximum means "no limit" and leaves the attribute out of the context.
type Budget struct {
	CallsMax        int64 // max_calls_per_run
	InFlight        int64 // calls of this principal running now
	InFlightMax     int64
	RateTokens      int64 // whole tokens left in the principal's bucket
	CPUMillisUsed   int64 // CPU charged to this run
	CPUMillisMax    int64
	OutputBytesUsed int64 // stdout+stderr charged to this run
	OutputBytesMax  int64
}

// ArgvDigest is context.argv_digest: the hex SHA-256 of the arguments, each
// followed by a NUL byte (`printf '%s\0' "$@" | sha256sum` in a shell), or ""
// for an empty argv.
func ArgvDigest(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	// A command line of usual length is hashed from a buffer on the stack,
	// a longer one streamed.
	var (
		buf [1024]byte
		sum [sha256.Size]byte
		hx  [2 * sha256.Size]byte
	)
	b := buf[:0]
	for _, a := range argv {
		if len(a)+1 > cap(b)-len(b) {
			b = nil
			break
		}
		b = append(b, a...)
		b = append(b, 0)
	}
	if b != nil {
		sum = sha256.Sum256(b)
	} else {
		h := sha256.New()
		for _, a := range argv {
			io.WriteString(h, a)
			h.Write([]byte{0})
		}
		h.Sum(sum[:0])
	}
	hex.Encode(hx[:], sum[:])
	return string(hx[:])
}
