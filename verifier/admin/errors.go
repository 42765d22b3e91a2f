package admin

import (
	"errors"
	"fmt"

	"github.com/stockade-dev/stockade/ipc"
)

// Reason says why the verifier refused a request. The set is closed and
// documented in docs/PROTOCOL.md; the CLI maps each to an exit code.
type Reason = ipc.Reason

// The reasons, as ipc defines them.
const (
	ReasonInvalid      = ipc.ReasonInvalid      // a signature or signed digest does not match
	ReasonMalformed    = ipc.ReasonMalformed    // unparseable, unsafe or over a limit
	ReasonBadRequest   = ipc.ReasonBadRequest   // an argument is not well formed
	ReasonUntrusted    = ipc.ReasonUntrusted    // the key is not trusted for this
	ReasonKeyMismatch  = ipc.ReasonKeyMismatch  // signed by another key than the id's owner
	ReasonRevoked      = ipc.ReasonRevoked      // the key or release is revoked
	ReasonRollback     = ipc.ReasonRollback     // a sequence below the high-water mark
	ReasonEquivocation = ipc.ReasonEquivocation // the high-water sequence with another statement
	ReasonAuditFailed  = ipc.ReasonAuditFailed  // the WASM audit failed: not promotable
	ReasonWrongDigest  = ipc.ReasonWrongDigest  // the digest named is not the release's
	ReasonNotFound     = ipc.ReasonNotFound     // no such skill, release or key
	ReasonNotActive    = ipc.ReasonNotActive    // no active release
	ReasonDisabled     = ipc.ReasonDisabled     // the skill is disabled
	ReasonTampered     = ipc.ReasonTampered     // installed files differ from the signed statement
	ReasonBadState     = ipc.ReasonBadState     // the release's state does not allow it
	ReasonDenied       = ipc.ReasonDenied       // not an admin
	ReasonStore        = ipc.ReasonStore        // the store or skills directory is unusable
	ReasonInternal     = ipc.ReasonInternal     // the verifier failed
	// ReasonProtocol is the client's own: the verifier answered with
	// something this client does not understand (another version).
	ReasonProtocol Reason = "protocol"
)

// Error is a refusal by the verifier (or by this client for a reply it could
// not read). Test with errors.As, or errors.Is against a Reason.
type Error struct {
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Reason, e.Message)
}

// Is lets errors.Is(err, admin.ReasonRevoked) match, and errors.Is(err,
// &admin.Error{Reason: r}).
func (e *Error) Is(target error) bool {
	if r, ok := target.(Reason); ok {
		return e.Reason == r
	}
	if t, ok := target.(*Error); ok {
		return t.Reason == e.Reason && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// ReasonOf returns err's Reason, or "" if err is not an *Error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// fromWire turns what the connection returned into an *Error: a typed
// refusal keeps its reason; an ipc error without one gets the reason its
// class implies; a broken reply is ReasonProtocol. Transport errors (the
// socket closed, a timeout) pass through unchanged.
func fromWire(err error) error {
	if err == nil {
		return nil
	}
	var ie *ipc.Error
	if errors.As(err, &ie) {
		r := ie.Reason
		if r == "" {
			switch ie.Class {
			case ipc.ClassDenied:
				r = ReasonDenied
			case ipc.ClassInvalidInput:
				r = ReasonBadRequest
			case ipc.ClassProtocol, ipc.ClassVersionMismatch:
				r = ReasonProtocol
			default:
				r = ReasonInternal
			}
		}
		return &Error{Reason: r, Message: ie.Message}
	}
	if errors.Is(err, ipc.ErrMalformed) || errors.Is(err, ipc.ErrFrameTooLarge) || errors.Is(err, ipc.ErrUnexpectedFD) {
		return &Error{Reason: ReasonProtocol, Message: err.Error()}
	}
	return err
}
