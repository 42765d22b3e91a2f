package trust

import (
	"cmp"
	"slices"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// SkillView is everything the store holds about one skill id: a copy.
type SkillView struct {
	ID skill.ID
	// Owner is the key the id is pinned to ("" before any promotion);
	// FormerOwners are the keys rotations moved it away from.
	Owner        skill.Fingerprint
	FormerOwners []skill.Fingerprint
	// Current is the last promoted release's digest (zero if none).
	Current       skill.Digest
	HasCurrent    bool
	Approved      skill.Capabilities
	HighWater     []HighWater
	Releases      []Release // by sequence
	Equivocations []Equivocation
}

// HighWater is the highest sequence one key signed for an id.
type HighWater struct {
	Publisher skill.Fingerprint
	Sequence  uint64
	Digest    skill.Digest
}

// Equivocation is a refused statement that reused a sequence.
type Equivocation struct {
	Sequence  uint64
	Publisher skill.Fingerprint
	Kept      skill.Digest
	Refused   skill.Digest
	Time      time.Time
}

// KeyView is a publisher key as the store knows it.
type KeyView struct {
	Fingerprint skill.Fingerprint
	Skills      []skill.ID // pinned to it, sorted
	Releases    int        // releases in the store that it signed
	Revoked     bool
	RevokedAt   time.Time
}

// Skill returns what the store holds about id (not_found if nothing).
func (s *Store) Skill(id string) (SkillView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sr := s.st.Skills[id]
	if sr == nil {
		return SkillView{}, refuse(ReasonNotFound, id, "no such skill")
	}
	v := SkillView{ID: skill.ID(id), Owner: skill.Fingerprint(sr.Owner), Approved: sr.Approved.caps()}
	for _, fp := range sr.FormerOwners {
		v.FormerOwners = append(v.FormerOwners, skill.Fingerprint(fp))
	}
	if sr.Current != "" {
		v.Current, _ = skill.ParseDigest(sr.Current)
		v.HasCurrent = true
	}
	for fp, m := range sr.HighWater {
		d, _ := skill.ParseDigest(m.Digest)
		v.HighWater = append(v.HighWater, HighWater{Publisher: skill.Fingerprint(fp), Sequence: m.Sequence, Digest: d})
	}
	slices.SortFunc(v.HighWater, func(a, b HighWater) int { return cmp.Compare(a.Publisher, b.Publisher) })
	for _, r := range sr.Releases {
		v.Releases = append(v.Releases, r.release(id))
	}
	slices.SortStableFunc(v.Releases, func(a, b Release) int { return cmp.Compare(a.Sequence, b.Sequence) })
	for _, e := range sr.Equivocations {
		kept, _ := skill.ParseDigest(e.Kept)
		refused, _ := skill.ParseDigest(e.Refused)
		v.Equivocations = append(v.Equivocations, Equivocation{
			Sequence: e.Sequence, Publisher: skill.Fingerprint(e.Publisher), Kept: kept, Refused: refused, Time: e.Time,
		})
	}
	return v, nil
}

// Release returns the release of id whose statement digest is digest.
func (s *Store) Release(id string, digest skill.Digest) (Release, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sr := s.st.Skills[id]; sr != nil {
		for _, r := range sr.Releases {
			if r.Digest == digest.String() {
				return r.release(id), true
			}
		}
	}
	return Release{}, false
}

// Keys returns every key the store knows: owners, former owners, signers
// of releases it holds, and revoked keys, by fingerprint.
func (s *Store) Keys() []KeyView {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := map[string]*KeyView{}
	key := func(fp string) *KeyView {
		k := keys[fp]
		if k == nil {
			k = &KeyView{Fingerprint: skill.Fingerprint(fp), Skills: []skill.ID{}}
			keys[fp] = k
		}
		return k
	}
	for id, sr := range s.st.Skills {
		if sr.Owner != "" {
			k := key(sr.Owner)
			k.Skills = append(k.Skills, skill.ID(id))
		}
		for _, fp := range sr.FormerOwners {
			key(fp)
		}
		for _, r := range sr.Releases {
			key(r.Publisher).Releases++
		}
	}
	for fp, at := range s.st.RevokedKeys {
		k := key(fp)
		k.Revoked, k.RevokedAt = true, at
	}
	out := make([]KeyView, 0, len(keys))
	for _, k := range keys {
		slices.Sort(k.Skills)
		out = append(out, *k)
	}
	slices.SortFunc(out, func(a, b KeyView) int { return cmp.Compare(a.Fingerprint, b.Fingerprint) })
	return out
}

// AuditRecords returns the number of records in the audit log.
func (s *Store) AuditRecords() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}
