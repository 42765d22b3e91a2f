package trust

import (
	"fmt"
	"strconv"
)

// Reason is a stable code: why a release is quarantined, or why the store
// refused something. A Reason is itself an error, so callers test with
// errors.Is(err, trust.ReasonRollback). The codes go into the audit log and
// the verifier's JSON output.
type Reason string

// Quarantine reasons: a release admitted with any of them waits for an
// admin's Promote.
const (
	ReasonNewPublisher    Reason = "new_publisher"    // the key owns no skill id yet
	ReasonNewSkill        Reason = "new_skill"        // no key owns this skill id yet
	ReasonKeyMismatch     Reason = "key_mismatch"     // signed by another key than the id's owner
	ReasonNewCapabilities Reason = "new_capabilities" // asks for a host, secret, channel or storage not approved
	ReasonAuditFailed     Reason = "audit_failed"     // the caller's audit found problems
	ReasonUpdate          Reason = "update"           // a clean update, auto-activation off (or the skill disabled)
	// ReasonTampered is given by Quarantine: the release's installed files
	// no longer match its signed statement.
	ReasonTampered Reason = "tampered"
)

// Refusals: the store changed nothing (except to record equivocation).
const (
	ReasonRollback     Reason = "rollback"        // a lower sequence than the id's high-water mark
	ReasonEquivocation Reason = "equivocation"    // the high-water sequence again, another statement
	ReasonWrongDigest  Reason = "wrong_digest"    // Promote named a digest the release does not have
	ReasonKeyRevoked   Reason = "key_revoked"     // the signing key is revoked
	ReasonRevoked      Reason = "release_revoked" // the statement digest is revoked
	ReasonDisabled     Reason = "disabled"        // the skill's current release is disabled
	ReasonNotActive    Reason = "not_active"      // the skill has no active release
	ReasonNotFound     Reason = "not_found"       // no such skill or release
	ReasonBadState     Reason = "bad_state"       // the release's state does not allow the change
	ReasonInvalid      Reason = "invalid"         // a malformed argument (id, fingerprint)
	ReasonStoreUnsafe  Reason = "store_unsafe"    // wrong owner, mode or file type in the store
	ReasonStoreCorrupt Reason = "store_corrupt"   // state that does not parse or contradicts the log
	ReasonStoreLocked  Reason = "store_locked"    // another process has the store open
	ReasonStoreBroken  Reason = "store_broken"    // a write failed; reopen the store to recover
	ReasonAuditChain   Reason = "audit_chain"     // the audit log's hash chain does not verify
	ReasonUntrusted    Reason = "untrusted"       // a rotation from a key that does not own what it names
)

func (r Reason) Error() string { return string(r) }

// Error is a refusal by the store. Subject names what was refused (a skill
// id and version, a digest, a file); Detail is the store's own words.
type Error struct {
	Reason  Reason
	Subject string
	Detail  string
	Err     error
}

func (e *Error) Error() string {
	s := "trust: " + string(e.Reason)
	if e.Subject != "" {
		subj := e.Subject
		if len(subj) > 200 {
			subj = subj[:200] + "..."
		}
		s += " " + strconv.QuoteToASCII(subj)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes the Reason and the underlying error to errors.Is and As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

func refuse(r Reason, subject, format string, args ...any) *Error {
	return &Error{Reason: r, Subject: subject, Detail: fmt.Sprintf(format, args...)}
}

func wrap(r Reason, subject string, err error) *Error {
	return &Error{Reason: r, Subject: subject, Err: err}
}
