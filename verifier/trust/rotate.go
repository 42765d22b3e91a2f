package trust

import (
	"slices"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// Quarantine takes a release out of service with a reason (tampered: its
// installed files no longer match its statement), recorded in the audit
// log with detail. An active or disabled release stops running at once;
// it stays the skill's current release, so Promote after a repair brings
// it back. A revoked release stays revoked; a quarantined one gains the
// reason.
func (s *Store) Quarantine(id string, digest skill.Digest, reason Reason, detail string) (Release, error) {
	var out Release
	err := s.changeDigest(eventQuarantine, id, digest, func(_ *state, _ *skillRecord, r *releaseRecord, now time.Time) error {
		if r.State == StateRevoked {
			return refuse(ReasonRevoked, id+"@"+r.Version, "the release is revoked")
		}
		if !slices.Contains(r.Reasons, reason) {
			r.Reasons = append(r.Reasons, reason)
		}
		r.State, r.Changed = StateQuarantined, now
		out = r.release(id)
		return nil
	}, string(reason)+": "+detail)
	return out, err
}

// Rotate applies a key rotation that skill.OpenRotation verified (signed by
// both keys): the skill ids it names, or with All every id the old key
// owns, are pinned to the new key. Each id's high-water mark carries over
// to the new key, so the rotation cannot open a rollback. Rotate refuses a
// revoked old or new key, an id that does not exist (not_found) or that
// the old key does not own (untrusted), and a rotation that moves nothing.
// It returns the ids moved, sorted.
func (s *Store) Rotate(r *skill.Rotation) ([]string, error) {
	if r == nil || r.Old == r.New {
		return nil, refuse(ReasonInvalid, "", "not a rotation skill.OpenRotation returned")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return nil, s.broken
	}
	old, nu := string(r.Old), string(r.New)
	rec := &AuditRecord{Event: eventRotate, Decision: decisionDone, Publisher: nu, Details: []string{"from " + old}}
	next := s.st.clone()
	moved, err := func() ([]string, error) {
		if _, ok := next.RevokedKeys[old]; ok {
			return nil, refuse(ReasonKeyRevoked, old, "the old key is revoked")
		}
		if _, ok := next.RevokedKeys[nu]; ok {
			return nil, refuse(ReasonKeyRevoked, nu, "the new key is revoked")
		}
		var ids []string
		if r.All {
			for id, sr := range next.Skills {
				if sr.Owner == old {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				return nil, refuse(ReasonUntrusted, old, "the old key owns no skill")
			}
		} else {
			for _, id := range r.Skills {
				sr := next.Skills[string(id)]
				switch {
				case sr == nil:
					return nil, refuse(ReasonNotFound, string(id), "no such skill")
				case sr.Owner != old:
					return nil, refuse(ReasonUntrusted, string(id), "the old key does not own it")
				}
				ids = append(ids, string(id))
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			sr := next.Skills[id]
			sr.Owner = nu
			if !slices.Contains(sr.FormerOwners, old) {
				sr.FormerOwners = append(sr.FormerOwners, old)
			}
			sr.FormerOwners = slices.DeleteFunc(sr.FormerOwners, func(fp string) bool { return fp == nu })
			if o, ok := sr.HighWater[old]; ok && o.Sequence > sr.HighWater[nu].Sequence {
				sr.HighWater[nu] = o
			}
		}
		return ids, nil
	}()
	if err != nil {
		rec.Decision = decisionRefused
		rec.Reasons = []Reason{err.(*Error).Reason}
		rec.Details = append(rec.Details, err.(*Error).Detail)
		if cerr := s.commit(s.st.clone(), rec); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	for _, id := range moved {
		rec.Details = append(rec.Details, "skill "+id)
	}
	if err := s.commit(next, rec); err != nil {
		return nil, err
	}
	return moved, nil
}

// changeDigest is change for a release named by its digest alone.
func (s *Store) changeDigest(event, id string, digest skill.Digest, f func(*state, *skillRecord, *releaseRecord, time.Time) error, detail string) error {
	s.mu.Lock()
	version := ""
	if sr := s.st.Skills[id]; sr != nil {
		for _, r := range sr.Releases {
			if r.Digest == digest.String() {
				version = r.Version
			}
		}
	}
	s.mu.Unlock()
	if version == "" {
		if _, err := skill.ParseID(id); err != nil {
			return wrap(ReasonInvalid, id, err)
		}
		return refuse(ReasonNotFound, id, "no release %s", digest)
	}
	return s.changeDetail(event, id, version, digest, detail, f)
}
