package ipc

import "slices"

// Reason refines an error on the verifier and admin channels. It is a closed
// set: a peer that sends another reason has sent an invalid error message.
// The admin CLI maps reasons to exit codes, and the broker maps a failed
// resolve to what the agent sees, so a reason never changes meaning; new
// reasons are added, never renamed. docs/PROTOCOL.md lists them.
type Reason string

const (
	// ReasonInvalid: a signature or a signed digest does not match the
	// bytes (tampered in transit, or not signed by that key).
	ReasonInvalid Reason = "invalid"
	// ReasonMalformed: an archive, envelope, statement, manifest or
	// rotation statement is unparseable, unsafe or over a limit.
	ReasonMalformed Reason = "malformed"
	// ReasonBadRequest: an argument is not well formed (id, version,
	// digest, fingerprint), or the descriptors a request needs are
	// missing or unusable.
	ReasonBadRequest Reason = "bad_request"
	// ReasonUntrusted: the key is not trusted for what was asked (a
	// rotation from a key that does not own a skill it names).
	ReasonUntrusted Reason = "untrusted"
	// ReasonKeyMismatch: the release is signed by another key than the
	// one its skill id is pinned to; only a rotation changes that.
	ReasonKeyMismatch Reason = "key_mismatch"
	// ReasonRevoked: the key or the release is revoked.
	ReasonRevoked Reason = "revoked"
	// ReasonRollback: a lower sequence than the skill's high-water mark.
	ReasonRollback Reason = "rollback"
	// ReasonEquivocation: the high-water sequence again with another
	// statement; recorded as evidence.
	ReasonEquivocation Reason = "equivocation"
	// ReasonAuditFailed: the release's WASM audit failed, so it may not
	// be promoted.
	ReasonAuditFailed Reason = "audit_failed"
	// ReasonWrongDigest: promote or remove named a digest the release
	// does not have.
	ReasonWrongDigest Reason = "wrong_digest"
	// ReasonNotFound: no such skill, release or key.
	ReasonNotFound Reason = "not_found"
	// ReasonNotActive: the skill has no active release (only quarantined
	// or superseded ones).
	ReasonNotActive Reason = "not_active"
	// ReasonDisabled: the skill's release is disabled.
	ReasonDisabled Reason = "disabled"
	// ReasonTampered: the installed files differ from the signed
	// statement; the release has been quarantined.
	ReasonTampered Reason = "tampered"
	// ReasonBadState: the release's state does not allow the change
	// (remove an active release, enable one that is not disabled, ...).
	ReasonBadState Reason = "bad_state"
	// ReasonDenied: the peer may not use this socket.
	ReasonDenied Reason = "denied"
	// ReasonStore: the trust store or the skills directory is unusable
	// (locked, damaged, a failed write); see the verifier's log.
	ReasonStore Reason = "store"
	// ReasonInternal: the verifier failed.
	ReasonInternal Reason = "internal"
)

var reasons = []Reason{
	ReasonInvalid, ReasonMalformed, ReasonBadRequest, ReasonUntrusted,
	ReasonKeyMismatch, ReasonRevoked, ReasonRollback, ReasonEquivocation,
	ReasonAuditFailed, ReasonWrongDigest, ReasonNotFound, ReasonNotActive,
	ReasonDisabled, ReasonTampered, ReasonBadState, ReasonDenied, ReasonStore,
	ReasonInternal,
}

// Error makes a Reason usable with errors.Is: errors.Is(err,
// ipc.ReasonRevoked) holds for an *Error with that reason.
func (r Reason) Error() string { return string(r) }

// Reasons returns the closed set of reasons, in a fixed order.
func Reasons() []Reason { return slices.Clone(reasons) }

// Valid reports whether r is one of the defined reasons.
func (r Reason) Valid() bool { return slices.Contains(reasons, r) }

// Class is the error class an error with this reason carries.
func (r Reason) Class() ErrorClass {
	switch r {
	case ReasonInvalid, ReasonMalformed, ReasonBadRequest, ReasonWrongDigest, ReasonNotFound, ReasonBadState:
		return ClassInvalidInput
	case ReasonUntrusted, ReasonKeyMismatch, ReasonRevoked, ReasonRollback, ReasonEquivocation,
		ReasonAuditFailed, ReasonNotActive, ReasonDisabled, ReasonDenied:
		return ClassDenied
	case ReasonTampered:
		return ClassFailed
	default:
		return ClassInternal
	}
}

// ReasonError builds an *Error with reason r and r's class.
func ReasonError(r Reason, format string, a ...any) *Error {
	e := Errorf(r.Class(), format, a...)
	e.Reason = r
	return e
}
