package hostcall

import "errors"

// The classes of every error this package returns. Each maps to one error
// code of the host ABI (executor/wasm: ErrDenied, ErrUnavailable,
// ErrInvalid, ErrQuota, ErrNotFound); test with errors.Is. The text of an
// error names hosts, addresses and keys for the broker's log; only the
// class may go back to the guest.
var (
	// ErrDenied: the grant does not cover it (a host or port not granted,
	// a resolved address the grant does not permit, a redirect to another
	// origin, a secret not granted).
	ErrDenied = errors.New("denied")
	// ErrUnavailable: the broker could not do it (resolution or network
	// failure, TLS verification failure, time cap, a closed store).
	ErrUnavailable = errors.New("unavailable")
	// ErrInvalid: malformed arguments (a request that fails strict
	// decoding, a bad key, an unknown skill id form).
	ErrInvalid = errors.New("invalid")
	// ErrQuota: a size or count limit (response body, key or value size,
	// a skill's total bytes or keys, a kv_list result).
	ErrQuota = errors.New("quota exceeded")
	// ErrNotFound: no such key, or no value configured for a granted
	// secret.
	ErrNotFound = errors.New("not found")
)
