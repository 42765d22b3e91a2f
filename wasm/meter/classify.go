package meter

import (
	"context"
	"errors"
	"reflect"

	"github.com/tetratelabs/wazero/sys"
)

// Kind is the class of a metered call's outcome.
type Kind uint8

const (
	KindOK          Kind = iota // the call returned
	KindFuel                    // quota_exceeded, resource fuel
	KindDepth                   // quota_exceeded, resource depth (instrumented limit or engine stack)
	KindTimedOut                // timed_out: deadline or watchdog
	KindInterrupted             // stopped by Interrupt with another cause, or a canceled context
	KindTrap                    // the guest trapped: unreachable, out of bounds, divide by zero...
	KindOther                   // anything else: a host function's own failure, a closed module
)

var kindNames = [...]string{
	KindOK: "ok", KindFuel: "fuel", KindDepth: "depth", KindTimedOut: "timed_out",
	KindInterrupted: "interrupted", KindTrap: "trap", KindOther: "other",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Status is the outcome status for the wire: "ok", "quota_exceeded",
// "timed_out", "interrupted", "trap" or "failed".
func (k Kind) Status() string {
	switch k {
	case KindOK:
		return "ok"
	case KindFuel, KindDepth:
		return "quota_exceeded"
	case KindTimedOut:
		return "timed_out"
	case KindInterrupted:
		return "interrupted"
	case KindTrap:
		return "trap"
	}
	return "failed"
}

// trapNames maps the messages of wazero's runtime errors (its internal
// wasmruntime package) to stable names. The engine's stack overflow is a
// depth quota, not a trap.
var trapNames = map[string]string{
	"unreachable":                   "unreachable",
	"out of bounds memory access":   "out_of_bounds_memory_access",
	"invalid table access":          "invalid_table_access",
	"indirect call type mismatch":   "indirect_call_type_mismatch",
	"integer divide by zero":        "integer_divide_by_zero",
	"integer overflow":              "integer_overflow",
	"invalid conversion to integer": "invalid_conversion_to_integer",
	"null reference":                "null_reference",
	"unaligned atomic":              "unaligned_atomic",
	"expected shared memory":        "expected_shared_memory",
	"too many waiters":              "too_many_waiters",
	"uncaught exception":            "uncaught_exception",
}

const (
	wazeroRuntimeError  = "*wasmruntime.Error"
	wazeroStackOverflow = "stack overflow"
)

// Classify maps an error from api.Function.Call (or InstantiateModule) of a
// metered instance to a Kind. The string names the resource of a quota
// ("fuel", "depth") or the trap ("unreachable", "out_of_bounds_memory_access",
// ...; "other" for a trap this version does not know), and is empty
// otherwise.
func Classify(err error) (Kind, string) {
	switch {
	case err == nil:
		return KindOK, ""
	case errors.Is(err, ErrFuelExhausted):
		return KindFuel, "fuel"
	case errors.Is(err, ErrDepthExceeded):
		return KindDepth, "depth"
	case errors.Is(err, ErrTimedOut), errors.Is(err, context.DeadlineExceeded):
		return KindTimedOut, ""
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return KindInterrupted, ""
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return KindTimedOut, ""
		case sys.ExitCodeContextCanceled:
			return KindInterrupted, ""
		}
		return KindOther, ""
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		// wazero's runtime errors have an internal type, recognised by name
		// so that a host function's error with the same text is not a trap.
		if reflect.TypeOf(e).String() != wazeroRuntimeError {
			continue
		}
		msg := e.Error()
		if msg == wazeroStackOverflow {
			return KindDepth, "depth"
		}
		if name, ok := trapNames[msg]; ok {
			return KindTrap, name
		}
		return KindTrap, "other"
	}
	return KindOther, ""
}
