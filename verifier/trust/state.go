package trust

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// stateFormat is the version of state.json's layout.
const stateFormat = 1

// state is everything the store knows but the audit log: kept in memory,
// written whole to state.json after every decision. It is the store's own
// file, but it is still parsed strictly and checked field by field, so a
// damaged file refuses to open rather than grants anything.
type state struct {
	Format int `json:"format"`
	// AuditCount and AuditHead name the last audit record whose decision
	// this state holds (count 0: none; head: hex SHA-256 of its line).
	AuditCount     uint64                  `json:"audit_count"`
	AuditHead      string                  `json:"audit_head"`
	RevokedKeys    map[string]time.Time    `json:"revoked_keys"`    // fingerprint → when
	RevokedDigests map[string]time.Time    `json:"revoked_digests"` // "sha256:..." → when
	Skills         map[string]*skillRecord `json:"skills"`          // by id
}

type skillRecord struct {
	// Owner is the fingerprint of the key first promoted for the id
	// ("" until then).
	Owner string `json:"owner"`
	// Approved are the capabilities of the last promoted release.
	Approved capsRecord `json:"approved"`
	// Current is the digest of the last promoted release: active,
	// disabled or revoked since. "" before any promotion.
	Current string `json:"current"`
	// HighWater is, per signing key, the highest sequence seen for the id
	// and the digest of the statement that carried it. Removing a release
	// does not lower it.
	HighWater map[string]mark `json:"high_water"`
	// FormerOwners are the keys the id was rotated away from, oldest
	// first. A release one of them signed may stay active (or disabled)
	// until a release of the owner replaces it; none may be promoted.
	FormerOwners  []string         `json:"former_owners,omitempty"`
	Equivocations []equivocation   `json:"equivocations"`
	Releases      []*releaseRecord `json:"releases"`
}

type mark struct {
	Sequence uint64 `json:"sequence"`
	Digest   string `json:"digest"`
}

// equivocation is a refused statement that reused a sequence, kept for
// the admin.
type equivocation struct {
	Sequence  uint64    `json:"sequence"`
	Publisher string    `json:"publisher"`
	Kept      string    `json:"kept"`
	Refused   string    `json:"refused"`
	Time      time.Time `json:"time"`
}

type capsRecord struct {
	HTTP     []string `json:"http"`
	Secrets  []string `json:"secrets"`
	Storage  bool     `json:"storage"`
	Channels []string `json:"channels"`
}

type releaseRecord struct {
	Version       string     `json:"version"`
	Sequence      uint64     `json:"sequence"`
	Digest        string     `json:"digest"`
	Publisher     string     `json:"publisher"`
	State         State      `json:"state"`
	Reasons       []Reason   `json:"reasons"`
	AuditProblems []string   `json:"audit_problems"`
	Capabilities  capsRecord `json:"capabilities"`
	FirstSeen     time.Time  `json:"first_seen"`
	Changed       time.Time  `json:"changed"`
}

func newState() *state {
	return &state{
		Format:         stateFormat,
		RevokedKeys:    map[string]time.Time{},
		RevokedDigests: map[string]time.Time{},
		Skills:         map[string]*skillRecord{},
	}
}

func toCaps(c skill.Capabilities) capsRecord {
	return capsRecord{
		HTTP:     nonNil(c.HTTP),
		Secrets:  nonNil(c.Secrets),
		Storage:  c.Storage,
		Channels: nonNil(c.Channels),
	}
}

func (c capsRecord) caps() skill.Capabilities {
	return cloneCaps(skill.Capabilities{HTTP: c.HTTP, Secrets: c.Secrets, Storage: c.Storage, Channels: c.Channels})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

func (r *releaseRecord) release(id string) Release {
	d, _ := skill.ParseDigest(r.Digest) // checked by decodeState
	return Release{
		ID:            skill.ID(id),
		Version:       r.Version,
		Sequence:      r.Sequence,
		Digest:        d,
		Publisher:     skill.Fingerprint(r.Publisher),
		State:         r.State,
		Reasons:       slices.Clone(r.Reasons),
		AuditProblems: slices.Clone(r.AuditProblems),
		Capabilities:  r.Capabilities.caps(),
		FirstSeen:     r.FirstSeen,
		Changed:       r.Changed,
	}
}

// clone deep-copies st, so that a decision is made on a copy and only
// swapped in once it is on disk.
func (st *state) clone() *state {
	b, err := json.Marshal(st)
	if err != nil {
		panic(err) // only plain data: cannot fail
	}
	c, err := decodeState(b)
	if err != nil {
		panic(err)
	}
	return c
}

// decodeState parses state.json strictly and checks every field.
func decodeState(data []byte) (*state, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	st := new(state)
	if err := dec.Decode(st); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the state")
	}
	if st.Format != stateFormat {
		return nil, fmt.Errorf("format %d, want %d", st.Format, stateFormat)
	}
	if st.RevokedKeys == nil || st.RevokedDigests == nil || st.Skills == nil {
		return nil, fmt.Errorf("missing maps")
	}
	if (st.AuditCount == 0) != (st.AuditHead == "") {
		return nil, fmt.Errorf("audit count and head disagree")
	}
	for fp := range st.RevokedKeys {
		if _, err := skill.ParseFingerprint(fp); err != nil {
			return nil, err
		}
	}
	for d := range st.RevokedDigests {
		if _, err := skill.ParseDigest(d); err != nil {
			return nil, err
		}
	}
	for id, sr := range st.Skills {
		if _, err := skill.ParseID(id); err != nil {
			return nil, err
		}
		if sr == nil || sr.HighWater == nil {
			return nil, fmt.Errorf("skill %q: missing record", id)
		}
		if sr.Owner != "" {
			if _, err := skill.ParseFingerprint(sr.Owner); err != nil {
				return nil, err
			}
		}
		for _, fp := range sr.FormerOwners {
			if _, err := skill.ParseFingerprint(fp); err != nil {
				return nil, err
			}
		}
		seen := map[string]bool{}
		active := 0
		for _, r := range sr.Releases {
			if r == nil {
				return nil, fmt.Errorf("skill %q: null release", id)
			}
			if _, err := skill.ParseDigest(r.Digest); err != nil {
				return nil, err
			}
			if _, err := skill.ParseFingerprint(r.Publisher); err != nil {
				return nil, err
			}
			if _, err := skill.ParseVersion(r.Version); err != nil {
				return nil, err
			}
			if seen[r.Digest] {
				return nil, fmt.Errorf("skill %q: digest %s twice", id, r.Digest)
			}
			seen[r.Digest] = true
			switch r.State {
			case StateActive:
				active++
				if r.Digest != sr.Current || (r.Publisher != sr.Owner && !slices.Contains(sr.FormerOwners, r.Publisher)) {
					return nil, fmt.Errorf("skill %q: active release is not the current one of the owner", id)
				}
			case StateQuarantined, StateSuperseded, StateDisabled, StateRevoked:
			default:
				return nil, fmt.Errorf("skill %q: state %q", id, r.State)
			}
		}
		if active > 1 {
			return nil, fmt.Errorf("skill %q: %d active releases", id, active)
		}
	}
	return st, nil
}

func (st *state) encode() []byte {
	b, err := json.MarshalIndent(st, "", "\t")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
