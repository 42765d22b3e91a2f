package ipc

import (
	"errors"
	"fmt"
	"slices"
)

// ErrorClass is the closed set of error kinds that cross the wire. A peer sees
// the class and a short message written for it; details stay in local logs.
type ErrorClass string

const (
	// ClassInvalidInput: the request is malformed, too large, names an unknown
	// tool, or its arguments fail the tool's checks.
	ClassInvalidInput ErrorClass = "invalid_input"
	// ClassDenied: the peer or the call is not authorized.
	ClassDenied ErrorClass = "denied"
	// ClassBudgetExceeded: the run has used its budget.
	ClassBudgetExceeded ErrorClass = "budget_exceeded"
	// ClassQuotaExceeded: a resource quota (output, CPU, memory, fuel) was hit.
	ClassQuotaExceeded ErrorClass = "quota_exceeded"
	// ClassCapabilityDenied: the call asked for a capability it was not granted.
	ClassCapabilityDenied ErrorClass = "capability_denied"
	// ClassTimedOut: the call passed its wall-clock deadline.
	ClassTimedOut ErrorClass = "timed_out"
	// ClassSandboxUnavailable: the host cannot provide the sandbox the call needs.
	ClassSandboxUnavailable ErrorClass = "sandbox_unavailable"
	// ClassFailed: the target could not be run (for example, no such command).
	ClassFailed ErrorClass = "failed"
	// ClassInternal: Stockade itself failed.
	ClassInternal ErrorClass = "internal"
	// ClassVersionMismatch: the peer speaks another protocol version or channel.
	ClassVersionMismatch ErrorClass = "version_mismatch"
	// ClassProtocol: the peer sent a frame that is not a permitted message.
	ClassProtocol ErrorClass = "protocol"
)

var classes = []ErrorClass{
	ClassInvalidInput, ClassDenied, ClassBudgetExceeded, ClassQuotaExceeded,
	ClassCapabilityDenied, ClassTimedOut, ClassSandboxUnavailable, ClassFailed,
	ClassInternal, ClassVersionMismatch, ClassProtocol,
}

// Valid reports whether c is one of the defined classes.
func (c ErrorClass) Valid() bool { return slices.Contains(classes, c) }

// Error is the body of an `error` message and the Go error a client gets back.
// Policies is set only for ClassDenied decisions that name deciding policies.
type Error struct {
	Class    ErrorClass `msgpack:"class" json:"class"`
	Message  string     `msgpack:"message" json:"message"`
	Policies []string   `msgpack:"policies,omitempty" json:"policies,omitempty"`
	// Reason refines the class on the verifier and admin channels; it is
	// one of the closed set in reason.go, or empty.
	Reason Reason `msgpack:"reason,omitempty" json:"reason,omitempty"`
	// Attestation is the signed record of a call that was decided and
	// refused (or failed), when the broker attested it.
	Attestation *Attestation `msgpack:"attestation,omitempty" json:"attestation,omitempty"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Class)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Message)
}

// Is makes errors.Is(err, &Error{Class: c}) match on the class alone,
// errors.Is(err, &Error{Class: c, Reason: r}) on the class and reason, and
// errors.Is(err, r) on the reason r alone.
func (e *Error) Is(target error) bool {
	if r, ok := target.(Reason); ok {
		return e.Reason == r
	}
	t, ok := target.(*Error)
	return ok && t.Class == e.Class && t.Message == "" && (t.Reason == "" || t.Reason == e.Reason)
}

// valid reports whether e may cross the wire: a defined class, and a
// defined reason or none.
func (e *Error) valid() bool { return e.Class.Valid() && (e.Reason == "" || e.Reason.Valid()) }

// Errorf builds an *Error of class c.
func Errorf(c ErrorClass, format string, a ...any) *Error {
	return &Error{Class: c, Message: fmt.Sprintf(format, a...)}
}

// ClassOf returns the class of err if it is (or wraps) an *Error, and
// ClassInternal otherwise: an error nobody classified is not the peer's
// business.
func ClassOf(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) && e.Class.Valid() {
		return e.Class
	}
	return ClassInternal
}

// Class sentinels for errors.Is.
var (
	ErrInvalidInput       error = &Error{Class: ClassInvalidInput}
	ErrDenied             error = &Error{Class: ClassDenied}
	ErrQuotaExceeded      error = &Error{Class: ClassQuotaExceeded}
	ErrTimedOut           error = &Error{Class: ClassTimedOut}
	ErrSandboxUnavailable error = &Error{Class: ClassSandboxUnavailable}
	ErrFailed             error = &Error{Class: ClassFailed}
	ErrInternal           error = &Error{Class: ClassInternal}
	ErrVersionMismatch    error = &Error{Class: ClassVersionMismatch}
	ErrProtocol           error = &Error{Class: ClassProtocol}
)
