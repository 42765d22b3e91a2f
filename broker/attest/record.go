package attest

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/stockade-dev/stockade/ipc"
)

// Record is what the broker attests about one call that reached a
// decision: who asked, what was decided and by which policies, how the call
// was confined and limited, what ran (by digest), what went in and came out
// (by digest, never the bytes), how it ended, what it consumed, and when.
// Seq, Prev and KeyID place it in the log; [Log.Append] fills them.
//
// A record cannot contradict itself: a denied call did not run (Status is
// empty and Error names why), and a call either ran (Status set) or ended in
// an error class (Error set), never both. [Encode] refuses anything else.
type Record struct {
	// Seq numbers the records of a chain from 1, without gaps.
	Seq uint64 `json:"seq"`
	// Prev is the hash of record Seq-1 ([Signed.Hash]); zero for Seq 1.
	Prev Digest `json:"prev"`
	// KeyID names the attestation key that signs the record ([KeyIDOf]).
	KeyID string `json:"key_id"`

	CallID    string    `json:"call_id"`
	RunID     string    `json:"run_id"`
	Principal Principal `json:"principal"`
	Tool      string    `json:"tool"`

	Decision Decision `json:"decision"`
	// Policies are the ids of the deciding policies: on allow the permits
	// that matched, on deny the forbids that matched and the policies that
	// failed to evaluate. Empty for the default deny and for refusals that
	// came before the policy (invalid input, budget).
	Policies []string `json:"policies"`

	// Tier is the tier the broker chose ("A", "B", "C"); empty when the call
	// was refused before one was chosen.
	Tier string `json:"tier"`
	// Receipt is what the executor reports it enforced; zero when no
	// executor ran.
	Receipt ipc.Receipt `json:"receipt"`
	// Limits are the limits the broker asked the executor to apply.
	Limits Limits `json:"limits"`
	// Artifact is what would run or ran: the resolved binary or the skill's
	// modules, by digest.
	Artifact Artifact `json:"artifact"`

	// Input, Stdout and Stderr are digests of the call's input ([InputDigest])
	// and of the output the agent received (plain SHA-256, as sha256sum
	// prints it). Zero when there is none to digest (a refused call has no
	// output).
	Input  Digest `json:"input"`
	Stdout Digest `json:"stdout"`
	Stderr Digest `json:"stderr"`

	Result Result `json:"result"`
	Usage  Usage  `json:"usage"`

	// Start is when the broker received the call and End when it decided
	// (refusals) or had the outcome, in Unix nanoseconds, wall clock.
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
}

// Principal is the agent as the broker resolved it from the peer uid that
// the kernel reported.
type Principal struct {
	UID  uint32 `json:"uid"`
	Name string `json:"name"`
}

// Decision is the broker's verdict on a call.
type Decision uint8

const (
	// Allow: the call was authorized and handed to an executor.
	Allow Decision = 1
	// Deny: the call was refused (policy, budget, guardrails, input).
	Deny Decision = 2
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("decision(%d)", uint8(d))
}

// MarshalText writes "allow" or "deny".
func (d Decision) MarshalText() ([]byte, error) {
	if d != Allow && d != Deny {
		return nil, fmt.Errorf("attest: invalid decision %d", uint8(d))
	}
	return []byte(d.String()), nil
}

// Limits are the limits the broker set for the call: the executor's
// rlimits and cgroup limits, the wall clock and output quota, and for Tier A
// the fuel budget and the version of the instrumentation schedule that
// counts it.
type Limits struct {
	Rlimits      ipc.Rlimits `json:"rlimits"`
	TimeoutMS    int64       `json:"timeout_ms"`
	MaxOutput    int64       `json:"max_output"`
	Fuel         uint64      `json:"fuel"`
	FuelSchedule string      `json:"fuel_schedule"`
}

// Artifact kinds.
const (
	ArtifactBinary = "binary" // a native program: Name is its resolved path
	ArtifactSkill  = "skill"  // a WASM skill: Name is publisher/name@version
)

// Artifact identifies what ran. For a binary, Digest is the SHA-256 of the
// file at the resolved path ([DigestFile]); for a skill, Digest is the
// archive's digest and Modules lists each module with its digest before
// and after instrumentation.
type Artifact struct {
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Digest  Digest   `json:"digest"`
	Modules []Module `json:"modules"`
}

// Module is one WebAssembly module of a skill.
type Module struct {
	Name         string `json:"name"`
	Digest       Digest `json:"digest"`
	Instrumented Digest `json:"instrumented"`
}

// Result is how the call ended: either the target ran (Status, ExitCode,
// Signal) or the call ended in an error class before or instead of an
// outcome (Error). Exactly one of Status and Error is set.
type Result struct {
	Status    ipc.Status     `json:"status"`
	ExitCode  int64          `json:"exit_code"`
	Signal    string         `json:"signal"`
	Error     ipc.ErrorClass `json:"error"`
	Truncated bool           `json:"truncated"`
}

// Usage is what the call consumed.
type Usage struct {
	UserMicros   uint64 `json:"user_us"`
	SystemMicros uint64 `json:"system_us"`
	MaxRSSKiB    uint64 `json:"max_rss_kib"`
	OutputBytes  uint64 `json:"output_bytes"`
	Fuel         uint64 `json:"fuel"`
}

// Digest is a SHA-256 digest. The zero Digest means "none".
type Digest [32]byte

// IsZero reports whether d is the zero ("none") digest.
func (d Digest) IsZero() bool { return d == Digest{} }

// String is the lowercase hex of d, or "" for the zero digest.
func (d Digest) String() string {
	if d.IsZero() {
		return ""
	}
	return hex.EncodeToString(d[:])
}

// MarshalText writes [Digest.String].
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDigest parses 64 hex digits; "" is the zero digest.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if s == "" {
		return d, nil
	}
	if len(s) != 2*len(d) {
		return d, fmt.Errorf("attest: digest %q is not %d hex digits", s, 2*len(d))
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("attest: digest %q: %w", s, err)
	}
	return d, nil
}

// ErrInvalidRecord is wrapped by every error for a record that is not
// self-consistent or not encodable.
var ErrInvalidRecord = errors.New("attest: invalid record")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, a...))
}

// Validate checks what the encoding cannot: the record's shape.
func (r *Record) Validate() error {
	if r.Seq == 0 {
		return invalid("seq 0")
	}
	if (r.Seq == 1) != r.Prev.IsZero() {
		return invalid("seq %d with a %s previous hash", r.Seq, map[bool]string{true: "zero", false: "non-zero"}[r.Prev.IsZero()])
	}
	if !validKeyID(r.KeyID) {
		return invalid("key id %q is not %d lowercase hex digits", r.KeyID, keyIDLen)
	}
	if r.Decision != Allow && r.Decision != Deny {
		return invalid("decision %d", uint8(r.Decision))
	}
	ran, failed := r.Result.Status != "", r.Result.Error != ""
	if ran == failed {
		return invalid("exactly one of status (%q) and error (%q) must be set", r.Result.Status, r.Result.Error)
	}
	if r.Decision == Deny && ran {
		return invalid("a denied call has status %q", r.Result.Status)
	}
	return nil
}

// SetSpec records what the broker planned: the tier, the limits and the
// resolved program as the artifact's name (its Digest is the caller's to
// set, see [DigestFile]).
func (r *Record) SetSpec(spec *ipc.ExecSpec) {
	r.Tier = spec.Tier
	r.Limits.Rlimits = spec.Limits
	r.Limits.TimeoutMS = spec.TimeoutMS
	r.Limits.MaxOutput = spec.MaxOutput
	if r.Artifact.Kind == "" {
		r.Artifact.Kind = ArtifactBinary
	}
	if r.Artifact.Name == "" {
		r.Artifact.Name = spec.Path
	}
}

// SetOutcome records what the executor reported: the enforcement receipt,
// how the target ended, what it consumed, and digests of the output the
// agent receives. Call it with the outcome as it goes to the agent.
func (r *Record) SetOutcome(out *ipc.Outcome) {
	r.Receipt = out.Sandbox
	r.Result = Result{
		Status: out.Status, ExitCode: int64(out.ExitCode), Signal: out.Signal,
		Truncated: out.Truncated,
	}
	r.Usage.UserMicros = nonNegative(out.Usage.UserMicros)
	r.Usage.SystemMicros = nonNegative(out.Usage.SystemMicros)
	r.Usage.MaxRSSKiB = nonNegative(out.Usage.MaxRSSKiB)
	r.Usage.OutputBytes = uint64(len(out.Stdout) + len(out.Stderr))
	r.Stdout = DigestBytes(out.Stdout)
	r.Stderr = DigestBytes(out.Stderr)
}

// SetError records that the call ended in err's class ([ipc.ClassOf]):
// a refusal, or a failure after the decision. The deciding policies an
// *ipc.Error names are recorded when Policies is still empty.
func (r *Record) SetError(err error) {
	r.Result = Result{Error: ipc.ClassOf(err)}
	var e *ipc.Error
	if len(r.Policies) == 0 && errors.As(err, &e) {
		r.Policies = append([]string(nil), e.Policies...)
	}
}

func nonNegative(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}
