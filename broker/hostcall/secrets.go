package hostcall

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
)

// Secrets holds the secret values the operator configured, per skill id.
// A value leaves it only through Get, for a grant that names the secret.
//
// Printing a Secrets never shows a value: String, Format (every verb,
// %#v included), LogValue and MarshalJSON all print a redacted summary.
// The values are held by a closure, not in a field, so that printing by
// reflection (a Secrets in an unexported field of a struct printed with
// %v, %s or %x) shows a function's address, never a map or bytes. The
// zero Secrets holds nothing.
type Secrets struct {
	lookup         func(skillID, name string) ([]byte, bool)
	skills, values int
}

// NewSecrets copies values (skill id → secret name → value). Names
// follow the manifest's grammar for secret names; skill ids must not be
// empty.
func NewSecrets(values map[string]map[string]string) (*Secrets, error) {
	table := make(map[string]map[string][]byte, len(values))
	count := 0
	for id, byName := range values {
		if id == "" {
			return nil, fmt.Errorf("%w: secrets for an empty skill id", ErrInvalid)
		}
		m := make(map[string][]byte, len(byName))
		for name, v := range byName {
			if !validName(name) {
				return nil, fmt.Errorf("%w: skill %q: secret name %q", ErrInvalid, id, name)
			}
			m[name] = []byte(v)
			count++
		}
		table[id] = m
	}
	lookup := func(skillID, name string) ([]byte, bool) {
		v, ok := table[skillID][name]
		return v, ok
	}
	return &Secrets{lookup: lookup, skills: len(table), values: count}, nil
}

// validName is the manifest's grammar for secret and channel names:
// [a-z][a-z0-9_-]*, at most 64 bytes.
func validName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Get returns a copy of the value of secret name for skillID, when grant
// names it (ErrDenied otherwise) and the operator configured it
// (ErrNotFound otherwise). Errors name the skill and the secret, never a
// value.
func (s Secrets) Get(grant Grant, skillID, name string) ([]byte, error) {
	if !slices.Contains(grant.Secrets, name) {
		return nil, fmt.Errorf("%w: secret %q is not granted to %q", ErrDenied, name, skillID)
	}
	if s.lookup == nil {
		return nil, fmt.Errorf("%w: no secret %q for %q", ErrNotFound, name, skillID)
	}
	v, ok := s.lookup(skillID, name)
	if !ok {
		return nil, fmt.Errorf("%w: no secret %q for %q", ErrNotFound, name, skillID)
	}
	return slices.Clone(v), nil
}

// String is a summary without values.
func (s Secrets) String() string {
	return fmt.Sprintf("hostcall.Secrets{skills: %d, values: %d, redacted}", s.skills, s.values)
}

// GoString is String: %#v shows no values either.
func (s Secrets) GoString() string { return s.String() }

// Format prints String for every verb.
func (s Secrets) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// LogValue is a summary without values.
func (s Secrets) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("skills", s.skills), slog.Int("values", s.values), slog.String("secrets", "redacted"))
}

// MarshalJSON is String as a JSON string.
func (s Secrets) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%q", s.String()), nil }

var (
	_ fmt.Stringer   = Secrets{}
	_ fmt.Formatter  = Secrets{}
	_ fmt.GoStringer = Secrets{}
	_ slog.LogValuer = Secrets{}
)
