package ipc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// ParseSHA256 parses a digest in its wire form: "sha256:" and 64
// lower-case hex digits.
func ParseSHA256(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return d, fmt.Errorf("%w: digest %q is not sha256:<64 lower-case hex digits>", ErrMalformed, s)
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("%w: digest %q is not sha256:<64 lower-case hex digits>", ErrMalformed, s)
	}
	return d, nil
}
