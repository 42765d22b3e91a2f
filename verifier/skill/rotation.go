package skill

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"slices"
)

// RotationPayloadType is the DSSE payload type of a key rotation statement.
// It differs from the skill statement's, so neither signature can be taken
// for the other.
const RotationPayloadType = "application/vnd.stockade.key-rotation.v1+json"

// MaxRotationSkills is the most skill ids a rotation names; a key that owns
// more rotates them with All.
const MaxRotationSkills = 64

// MaxRotationBytes bounds a rotation envelope.
const MaxRotationBytes = 32 << 10

// Rotation moves skill ids from one publisher key to another (TUF's root
// rotation rule): both keys sign it, so the old key vouches for the new one
// and the new one accepts. The trust store then pins the named ids (or,
// with All, every id the old key owns) to New.
//
// The wire form is canonical JSON, signed in a DSSE envelope by both keys:
//
//	{"old":{"fingerprint":"ed25519:SHA256:..."},
//	 "new":{"fingerprint":"ed25519:SHA256:..."},
//	 "skills":{"all":false,"ids":["acme.web"]}}
//
// (without the line breaks). ids is sorted, without repeats, and empty
// exactly when all is true.
type Rotation struct {
	Old, New Fingerprint
	All      bool
	Skills   []ID
}

type rotationJSON struct {
	Old    publisherJSON      `json:"old"`
	New    publisherJSON      `json:"new"`
	Skills rotationSkillsJSON `json:"skills"`
}

type rotationSkillsJSON struct {
	All bool     `json:"all"`
	IDs []string `json:"ids"`
}

// check validates a Rotation however it was made.
func (r *Rotation) check() error {
	if _, err := ParseFingerprint(string(r.Old)); err != nil {
		return refuseErr(ReasonRotationInvalid, "old", err, "")
	}
	if _, err := ParseFingerprint(string(r.New)); err != nil {
		return refuseErr(ReasonRotationInvalid, "new", err, "")
	}
	if r.Old == r.New {
		return refuse(ReasonRotationInvalid, string(r.New), "the new key is the old key")
	}
	switch {
	case r.All && len(r.Skills) > 0:
		return refuse(ReasonRotationInvalid, "", "all and a list of skills")
	case !r.All && len(r.Skills) == 0:
		return refuse(ReasonRotationInvalid, "", "no skills")
	case len(r.Skills) > MaxRotationSkills:
		return refuse(ReasonRotationInvalid, "", "%d skills; at most %d (or all)", len(r.Skills), MaxRotationSkills)
	}
	for i, id := range r.Skills {
		if _, err := ParseID(string(id)); err != nil {
			return refuseErr(ReasonRotationInvalid, string(id), err, "")
		}
		if i > 0 && id <= r.Skills[i-1] {
			return refuse(ReasonRotationInvalid, string(id), "skills must be sorted without repeats")
		}
	}
	return nil
}

// Marshal returns the canonical encoding of r.
func (r *Rotation) Marshal() ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	w := rotationJSON{
		Old:    publisherJSON{Fingerprint: string(r.Old)},
		New:    publisherJSON{Fingerprint: string(r.New)},
		Skills: rotationSkillsJSON{All: r.All, IDs: make([]string, len(r.Skills))},
	}
	for i, id := range r.Skills {
		w.Skills.IDs[i] = string(id)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		return nil, refuseErr(ReasonRotationInvalid, "", err, "encoding")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ParseRotation decodes a rotation statement strictly (no unknown, repeated
// or differently cased member, no null), requires its canonical form and
// checks every field. It verifies no signature: OpenRotation does.
func ParseRotation(data []byte) (*Rotation, error) {
	if len(data) > MaxRotationBytes {
		return nil, refuse(ReasonRotationMalformed, "", "longer than %d bytes", MaxRotationBytes)
	}
	var w rotationJSON
	if err := decodeStrictJSON(data, &w); err != nil {
		return nil, refuseErr(ReasonRotationMalformed, "", err, "")
	}
	r := &Rotation{Old: Fingerprint(w.Old.Fingerprint), New: Fingerprint(w.New.Fingerprint), All: w.Skills.All}
	for _, id := range w.Skills.IDs {
		r.Skills = append(r.Skills, ID(id))
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	canon, err := r.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, data) {
		return nil, refuse(ReasonRotationMalformed, "", "rotation is not in canonical form")
	}
	return r, nil
}

// SignRotation signs a rotation from oldKey to newKey for the given skill
// ids (nil or empty: every id oldKey owns) and returns the envelope, the
// file `trust import-rotation` takes.
func SignRotation(oldKey, newKey ed25519.PrivateKey, skills []ID) ([]byte, error) {
	if len(oldKey) != ed25519.PrivateKeySize || len(newKey) != ed25519.PrivateKeySize {
		return nil, refuse(ReasonKeyLength, "", "private keys must be %d bytes", ed25519.PrivateKeySize)
	}
	r := &Rotation{
		Old: FingerprintOf(oldKey.Public().(ed25519.PublicKey)),
		New: FingerprintOf(newKey.Public().(ed25519.PublicKey)),
	}
	r.Skills = slices.Clone(skills)
	slices.Sort(r.Skills)
	r.Skills = slices.Compact(r.Skills)
	r.All = len(r.Skills) == 0
	payload, err := r.Marshal()
	if err != nil {
		return nil, err
	}
	env, err := Sign(RotationPayloadType, payload, oldKey)
	if err != nil {
		return nil, err
	}
	second, err := Sign(RotationPayloadType, payload, newKey)
	if err != nil {
		return nil, err
	}
	env.Signatures = append(env.Signatures, second.Signatures...)
	return env.Marshal()
}

// OpenRotation verifies a rotation envelope and returns its statement: the
// envelope strictly parsed, the rotation payload type, exactly two
// signatures, each valid, by exactly the statement's old and new keys.
// Whether the old key owns the skills, and whether either key is revoked,
// is the trust store's decision.
func OpenRotation(envelope []byte) (*Rotation, error) {
	if len(envelope) > MaxRotationBytes {
		return nil, refuse(ReasonEnvelopeTooLarge, "", "longer than %d bytes", MaxRotationBytes)
	}
	env, err := ParseEnvelope(envelope)
	if err != nil {
		return nil, err
	}
	if env.PayloadType != RotationPayloadType {
		return nil, refuse(ReasonPayloadType, env.PayloadType, "want %q", RotationPayloadType)
	}
	if len(env.Signatures) != 2 {
		return nil, refuse(ReasonRotationSigners, "", "%d signatures; a rotation needs the old and the new key's", len(env.Signatures))
	}
	signers, err := env.Verify(RotationPayloadType)
	if err != nil {
		return nil, err
	}
	r, err := ParseRotation(env.Payload)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(signers, r.Old) || !slices.Contains(signers, r.New) {
		return nil, refuse(ReasonRotationSigners, "", "signed by %s and %s, not by the old key %s and the new key %s",
			signers[0], signers[1], r.Old, r.New)
	}
	return r, nil
}
