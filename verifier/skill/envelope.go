package skill

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
)

// The signature is a DSSE envelope (github.com/secure-systems-lab/dsse),
// stored beside the archive as "<archive>.sig":
//
//	{"payloadType": "application/vnd.stockade.skill-statement.v1+json",
//	 "payload":     "<standard base64 of the statement>",
//	 "signatures":  [{"keyid":     "ed25519:SHA256:<fingerprint>",
//	                  "publicKey": "<standard base64 of the 32-byte key>",
//	                  "sig":       "<standard base64 of the 64-byte signature>"}]}
//
// Each signature is Ed25519 over PAE(payloadType, payload). publicKey is an
// addition to DSSE: it lets a verifier that has never seen the key check the
// signature (and quarantine the skill) before any trust decision. keyid is a
// hint only: it must equal the key's fingerprint, and trust is always
// decided on the full key's fingerprint.

// Envelope is a decoded DSSE envelope. ParseEnvelope and Sign make
// envelopes whose keys and signatures have the right lengths; Verify checks
// them again, since the fields are exported.
type Envelope struct {
	PayloadType string
	Payload     []byte
	Signatures  []Signature
}

// Signature is one signature of an envelope.
type Signature struct {
	KeyID     Fingerprint
	PublicKey ed25519.PublicKey
	Sig       []byte
}

const (
	maxEnvelopeBytes = 4 << 20 // ParseEnvelope's own bound; Open's is Limits.EnvelopeBytes
	maxSignatures    = 4
	maxPayloadType   = 128
)

type envelopeJSON struct {
	PayloadType string          `json:"payloadType"`
	Payload     string          `json:"payload"`
	Signatures  []signatureJSON `json:"signatures"`
}

type signatureJSON struct {
	KeyID     string `json:"keyid"`
	PublicKey string `json:"publicKey"`
	Sig       string `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding, the bytes that are signed:
// "DSSEv1 " len(type) " " type " " len(payload) " " payload, lengths in
// ASCII decimal. It binds the payload type, so a signature cannot be moved
// to another kind of statement.
func PAE(payloadType string, payload []byte) []byte {
	b := make([]byte, 0, 32+len(payloadType)+len(payload))
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
}

// Sign returns an envelope of payload with one signature by key.
func Sign(payloadType string, payload []byte, key ed25519.PrivateKey) (*Envelope, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, refuse(ReasonKeyLength, "", "private key must be %d bytes", ed25519.PrivateKeySize)
	}
	if err := checkPayloadType(payloadType); err != nil {
		return nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	return &Envelope{
		PayloadType: payloadType,
		Payload:     bytes.Clone(payload),
		Signatures: []Signature{{
			KeyID:     FingerprintOf(pub),
			PublicKey: pub,
			Sig:       ed25519.Sign(key, PAE(payloadType, payload)),
		}},
	}, nil
}

func checkPayloadType(t string) error {
	if t == "" || len(t) > maxPayloadType {
		return refuse(ReasonPayloadType, t, "empty or longer than %d bytes", maxPayloadType)
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' || t[i] == '"' || t[i] == '\\' {
			return refuse(ReasonPayloadType, t, "payload type must be printable ASCII without spaces or quotes")
		}
	}
	return nil
}

// ParseEnvelope decodes an envelope strictly: no unknown or repeated
// members, exact case, every member present, standard padded base64 in its
// one canonical spelling, one to four signatures by distinct keys, keys of
// 32 bytes and signatures of 64, each keyid the fingerprint of its key. It
// does not verify signatures (Verify does) nor look at the payload.
func ParseEnvelope(data []byte) (*Envelope, error) {
	if len(data) > maxEnvelopeBytes {
		return nil, refuse(ReasonEnvelopeTooLarge, "", "longer than %d bytes", maxEnvelopeBytes)
	}
	var w envelopeJSON
	if err := decodeStrictJSON(data, &w); err != nil {
		return nil, refuseErr(ReasonEnvelopeMalformed, "", err, "")
	}
	if err := checkPayloadType(w.PayloadType); err != nil {
		return nil, err
	}
	payload, err := decodeBase64(w.Payload)
	if err != nil || len(payload) == 0 {
		return nil, refuseErr(ReasonEnvelopeMalformed, "payload", err, "payload must be non-empty standard base64")
	}
	if len(w.Signatures) == 0 || len(w.Signatures) > maxSignatures {
		return nil, refuse(ReasonSignatureCount, "", "%d signatures; want 1 to %d", len(w.Signatures), maxSignatures)
	}
	env := &Envelope{PayloadType: w.PayloadType, Payload: payload}
	for _, s := range w.Signatures {
		pub, err := decodeBase64(s.PublicKey)
		if err != nil {
			return nil, refuseErr(ReasonEnvelopeMalformed, "publicKey", err, "")
		}
		sig, err := decodeBase64(s.Sig)
		if err != nil {
			return nil, refuseErr(ReasonEnvelopeMalformed, "sig", err, "")
		}
		env.Signatures = append(env.Signatures, Signature{KeyID: Fingerprint(s.KeyID), PublicKey: pub, Sig: sig})
	}
	if err := env.checkSignatures(); err != nil {
		return nil, err
	}
	return env, nil
}

// checkSignatures checks the shape of every signature: lengths (before any
// key reaches ed25519.Verify, which panics on a wrong-length key), keyids,
// distinct keys.
func (e *Envelope) checkSignatures() error {
	if len(e.Signatures) == 0 || len(e.Signatures) > maxSignatures {
		return refuse(ReasonSignatureCount, "", "%d signatures; want 1 to %d", len(e.Signatures), maxSignatures)
	}
	seen := make(map[Fingerprint]bool, len(e.Signatures))
	for _, s := range e.Signatures {
		if len(s.PublicKey) != ed25519.PublicKeySize {
			return refuse(ReasonKeyLength, "", "public key is %d bytes; want %d", len(s.PublicKey), ed25519.PublicKeySize)
		}
		if len(s.Sig) != ed25519.SignatureSize {
			return refuse(ReasonSignatureLength, "", "signature is %d bytes; want %d", len(s.Sig), ed25519.SignatureSize)
		}
		fp := FingerprintOf(s.PublicKey)
		if s.KeyID != fp {
			return refuse(ReasonKeyID, string(s.KeyID), "keyid is not the fingerprint of the public key (%s)", fp)
		}
		if seen[fp] {
			return refuse(ReasonSignatureCount, string(fp), "key signs twice")
		}
		seen[fp] = true
	}
	return nil
}

// Marshal encodes e (compact JSON, members in the order shown above).
func (e *Envelope) Marshal() ([]byte, error) {
	if err := checkPayloadType(e.PayloadType); err != nil {
		return nil, err
	}
	if err := e.checkSignatures(); err != nil {
		return nil, err
	}
	w := envelopeJSON{
		PayloadType: e.PayloadType,
		Payload:     base64.StdEncoding.EncodeToString(e.Payload),
		Signatures:  make([]signatureJSON, len(e.Signatures)),
	}
	for i, s := range e.Signatures {
		w.Signatures[i] = signatureJSON{
			KeyID:     string(s.KeyID),
			PublicKey: base64.StdEncoding.EncodeToString(s.PublicKey),
			Sig:       base64.StdEncoding.EncodeToString(s.Sig),
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		return nil, refuseErr(ReasonEnvelopeMalformed, "", err, "encoding")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Verify checks that e carries payloadType and that every signature is a
// valid Ed25519 signature over PAE by its key. It returns the signing keys'
// fingerprints, in the envelope's order. It decides nothing about trust.
func (e *Envelope) Verify(payloadType string) ([]Fingerprint, error) {
	if e.PayloadType != payloadType {
		return nil, refuse(ReasonPayloadType, e.PayloadType, "want %q", payloadType)
	}
	if err := e.checkSignatures(); err != nil {
		return nil, err
	}
	msg := PAE(e.PayloadType, e.Payload)
	fps := make([]Fingerprint, 0, len(e.Signatures))
	for _, s := range e.Signatures {
		// Lengths were checked above: ed25519.Verify panics on a bad key length.
		if !ed25519.Verify(s.PublicKey, msg, s.Sig) {
			return nil, refuse(ReasonSignature, string(s.KeyID), "signature does not verify")
		}
		fps = append(fps, s.KeyID)
	}
	return fps, nil
}

// decodeBase64 accepts standard padded base64 in its one canonical
// spelling: no line breaks (which encoding/base64 skips), no stray padding
// bits.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, err
	}
	if base64.StdEncoding.EncodeToString(b) != s {
		return nil, errBase64
	}
	return b, nil
}

var errBase64 = errors.New("base64 is not in canonical form")
