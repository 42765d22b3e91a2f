package sdk

import (
	"errors"
	"strconv"
)

// Error codes of the host ABI: a host function that returns i64 returns a
// negative one of these instead of a result. They equal executor/wasm's
// Err* constants (a test keeps them equal).
const (
	codeDenied      = -1
	codeNotFound    = -2
	codeQuota       = -3
	codeInvalid     = -4
	codeUnavailable = -5
)

// The error classes a host function reports. Every error the SDK returns
// from a host call wraps exactly one of them: test with errors.Is.
var (
	// ErrDenied: the capability is not granted to this call (a host, secret
	// or channel the manifest did not ask for or the admin did not approve).
	ErrDenied = errors.New("sdk: capability denied")
	// ErrNotFound: no such key or secret value.
	ErrNotFound = errors.New("sdk: not found")
	// ErrQuota: a size or count limit (a value too large, the store full,
	// too many messages).
	ErrQuota = errors.New("sdk: over a quota")
	// ErrInvalid: the host refused the arguments (bad JSON, a key that is
	// not UTF-8, ...), or the SDK was used outside its call.
	ErrInvalid = errors.New("sdk: invalid arguments")
	// ErrUnavailable: the broker could not do it (a network error, a
	// refused address).
	ErrUnavailable = errors.New("sdk: unavailable")
	// ErrNotInSkill: the SDK runs only in a skill (GOOS=wasip1
	// GOARCH=wasm); every host call of a program built for another
	// platform returns it.
	ErrNotInSkill = errors.New("sdk: only in a skill (GOOS=wasip1 GOARCH=wasm)")
)

// codeNotInSkill is what the stubs of other platforms return. It is not
// an ABI code, so no host sends it; it fits an i32 (log returns one).
const codeNotInSkill = -1 << 30

// codeErr returns the error class of a negative result code.
func codeErr(code int64) error {
	switch code {
	case codeDenied:
		return ErrDenied
	case codeNotFound:
		return ErrNotFound
	case codeQuota:
		return ErrQuota
	case codeInvalid:
		return ErrInvalid
	case codeUnavailable:
		return ErrUnavailable
	case codeNotInSkill:
		return ErrNotInSkill
	}
	return unknownCode(code)
}

// unknownCode is a negative result this SDK does not know (a newer host).
type unknownCode int64

func (c unknownCode) Error() string {
	return "sdk: unknown host error code " + strconv.FormatInt(int64(c), 10)
}

// opError is a host call that failed: the function, what it was about (a
// host, secret, channel or key name; never a value) and the class.
type opError struct {
	op   string // the ABI function, "kv_get"
	name string // may be empty
	err  error
}

func (e *opError) Error() string {
	s := "sdk: " + e.op
	if e.name != "" {
		s += " " + strconv.Quote(e.name)
	}
	msg := e.err.Error()
	if len(msg) > 5 && msg[:5] == "sdk: " {
		msg = msg[5:]
	}
	return s + ": " + msg
}

func (e *opError) Unwrap() error { return e.err }
