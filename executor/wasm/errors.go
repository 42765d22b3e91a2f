package wasm

import (
	"errors"
	"fmt"
)

// Class is the class of a failed call, one of a closed set. The executor
// maps it onto the wire's error classes.
type Class string

const (
	// ClassQuotaExceeded: a limit was hit; Resource names it.
	ClassQuotaExceeded Class = "quota_exceeded"
	// ClassTimedOut: the call's deadline passed.
	ClassTimedOut Class = "timed_out"
	// ClassTrap: the guest trapped (Trap names how) or exited with a
	// non-zero code (Trap "exit").
	ClassTrap Class = "trap"
	// ClassCapabilityDenied: the guest used a handle the host did not issue
	// for that use.
	ClassCapabilityDenied Class = "capability_denied"
	// ClassInvalidInput: the call itself is malformed: no such tool export,
	// an input too large, a module that lacks the ABI's exports.
	ClassInvalidInput Class = "invalid_input"
	// ClassFailed: anything else: the guest broke the ABI's contract (an
	// output outside its memory), the call was canceled, or the host failed.
	ClassFailed Class = "failed"
)

// Resource names the limit of a quota_exceeded error.
type Resource string

const (
	ResourceFuel      Resource = "fuel"
	ResourceMemory    Resource = "memory"
	ResourceDepth     Resource = "depth"
	ResourceHostCalls Resource = "host_calls"
	ResourceOutput    Resource = "output"
)

// Trap kinds besides those of meter.Classify.
const (
	// TrapExit: the guest called proc_exit with a non-zero code.
	TrapExit = "exit"
)

// Error is how a call fails. Class, Resource and Trap are from closed sets
// and Message is the host's own text: all may cross the wire. Err is the
// underlying cause, for local logs only (it may carry wazero's stack trace).
type Error struct {
	Class     Class
	Resource  Resource // with ClassQuotaExceeded
	Trap      string   // with ClassTrap, or the trap behind a memory quota
	Message   string
	FuelUsed  uint64 // fuel used before the call ended
	HostCalls int    // host calls made
	Err       error
}

func (e *Error) Error() string {
	s := "wasm: " + string(e.Class)
	if e.Resource != "" {
		s += " (" + string(e.Resource) + ")"
	}
	if e.Trap != "" {
		s += " [" + e.Trap + "]"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ErrInvalidModule is what Compile returns (wrapped) for a module that is
// not a well-formed, instrumented Tier A module.
var ErrInvalidModule = errors.New("wasm: invalid module")

func quota(r Resource, format string, args ...any) *Error {
	return &Error{Class: ClassQuotaExceeded, Resource: r, Message: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) *Error {
	return &Error{Class: ClassFailed, Message: fmt.Sprintf(format, args...)}
}

func invalidInput(format string, args ...any) *Error {
	return &Error{Class: ClassInvalidInput, Message: fmt.Sprintf(format, args...)}
}

// procExit is the panic value of proc_exit: it unwinds the guest.
type procExit uint32

func (c procExit) Error() string { return fmt.Sprintf("wasm: proc_exit(%d)", uint32(c)) }
