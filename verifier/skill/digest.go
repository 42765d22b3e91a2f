package skill

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Digest is a SHA-256 digest.
type Digest [sha256.Size]byte

// String returns "sha256:" and the digest in lower-case hex, the form admins
// see and give back (promote --digest).
func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// Hex returns the digest in lower-case hex, the form the statement uses.
func (d Digest) Hex() string { return hex.EncodeToString(d[:]) }

// ParseDigest parses "sha256:" followed by 64 lower-case hex digits.
func ParseDigest(s string) (Digest, error) {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok {
		return Digest{}, refuse(ReasonStatementInvalid, s, "digest must start with \"sha256:\"")
	}
	return parseHexDigest(h)
}

// parseHexDigest parses exactly 64 lower-case hex digits: one spelling per
// digest.
func parseHexDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, refuse(ReasonStatementInvalid, s, "digest must be %d hex digits", 2*len(d))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return d, refuse(ReasonStatementInvalid, s, "digest must be lower-case hex")
		}
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, refuse(ReasonStatementInvalid, s, "digest is not hex")
	}
	return d, nil
}

// Fingerprint identifies a publisher key: "ed25519:SHA256:" and the
// unpadded base64url SHA-256 of the 32-byte public key. Publishers are
// known by fingerprint, never by the name they give themselves.
type Fingerprint string

const fingerprintPrefix = "ed25519:SHA256:"

// FingerprintOf returns pub's fingerprint. pub must be 32 bytes.
func FingerprintOf(pub ed25519.PublicKey) Fingerprint {
	sum := sha256.Sum256(pub)
	return Fingerprint(fingerprintPrefix + base64.RawURLEncoding.EncodeToString(sum[:]))
}

// ParseFingerprint checks that s is a well-formed fingerprint.
func ParseFingerprint(s string) (Fingerprint, error) {
	b64, ok := strings.CutPrefix(s, fingerprintPrefix)
	if !ok {
		return "", refuse(ReasonStatementInvalid, s, "fingerprint must start with %q", fingerprintPrefix)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(b64)
	if err != nil || len(raw) != sha256.Size || base64.RawURLEncoding.EncodeToString(raw) != b64 {
		return "", refuse(ReasonStatementInvalid, s, "fingerprint must be %d bytes in unpadded base64url", sha256.Size)
	}
	return Fingerprint(s), nil
}

// String returns the fingerprint.
func (f Fingerprint) String() string { return string(f) }
