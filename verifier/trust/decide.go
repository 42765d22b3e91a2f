package trust

import (
	"cmp"
	"io"
	"slices"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// Accept is the accept function for skill.Open: it refuses a revoked key
// before the archive signed by it is parsed. Admit checks again.
func (s *Store) Accept(fp skill.Fingerprint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.st.RevokedKeys[string(fp)]; ok {
		return refuse(ReasonKeyRevoked, string(fp), "the key is revoked")
	}
	return nil
}

// Admit decides what becomes of a verified skill: a new release is
// quarantined with its reasons, or (Options.AutoActivate, an update by
// the pinned key asking for nothing new, auditProblems empty) made
// active. auditProblems are the caller's audit findings; any quarantines
// the release "audit_failed". Admitting a release the store already holds
// returns it unchanged.
//
// Admit refuses a revoked key or digest, a sequence lower than the id's
// high-water mark (rollback), and the high-water sequence with another
// statement (equivocation, which is recorded). The high-water mark is the
// highest sequence signed for the id by the signing key or by the id's
// owner: a stranger's key cannot raise the bar for the owner.
func (s *Store) Admit(sk *skill.Skill, auditProblems []string) (Release, error) {
	if sk == nil || sk.Statement == nil || sk.Manifest == nil {
		return Release{}, refuse(ReasonInvalid, "", "not a skill skill.Open returned")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return Release{}, s.broken
	}
	st := sk.Statement
	id, fp, digest := string(st.ID), string(sk.Publisher), sk.StatementDigest.String()
	rec := &AuditRecord{
		Event: eventAdmit, ID: id, Version: st.Version.String(), Sequence: st.Sequence,
		Digest: digest, Publisher: fp,
	}
	subject := id + "@" + st.Version.String()
	refused := func(next *state, r Reason, format string, args ...any) (Release, error) {
		err := refuse(r, subject, format, args...)
		rec.Decision, rec.Reasons, rec.Details = decisionRefused, []Reason{r}, []string{err.Detail}
		if next == nil {
			next = s.st.clone()
		}
		if cerr := s.commit(next, rec); cerr != nil {
			return Release{}, cerr
		}
		return Release{}, err
	}
	if sk.Manifest.ID != st.ID || sk.Publisher != st.Publisher {
		return Release{}, refuse(ReasonInvalid, subject, "the skill is not one skill.Open returned")
	}
	if _, ok := s.st.RevokedKeys[fp]; ok {
		return refused(nil, ReasonKeyRevoked, "signed by revoked key %s", fp)
	}
	if _, ok := s.st.RevokedDigests[digest]; ok {
		return refused(nil, ReasonRevoked, "statement %s is revoked", digest)
	}

	next := s.st.clone()
	sr := next.Skills[id]
	if sr == nil {
		sr = &skillRecord{HighWater: map[string]mark{}, Approved: toCaps(skill.Capabilities{})}
		next.Skills[id] = sr
	}
	for _, r := range sr.Releases {
		if r.Digest == digest {
			rec.Decision = decisionKnown
			out := r.release(id)
			if err := s.commit(s.st.clone(), rec); err != nil {
				return Release{}, err
			}
			return out, nil
		}
	}

	// Rollback and equivocation, against the signer's and the owner's marks.
	hw := sr.HighWater[fp]
	if o, ok := sr.HighWater[sr.Owner]; ok && sr.Owner != fp && o.Sequence > hw.Sequence {
		hw = o
	}
	switch {
	case st.Sequence < hw.Sequence:
		return refused(nil, ReasonRollback, "sequence %d is below %d", st.Sequence, hw.Sequence)
	case st.Sequence == hw.Sequence && hw.Digest != "" && hw.Digest != digest:
		sr.Equivocations = append(sr.Equivocations, equivocation{
			Sequence: st.Sequence, Publisher: fp, Kept: hw.Digest, Refused: digest, Time: s.opts.Now().UTC(),
		})
		return refused(next, ReasonEquivocation, "sequence %d was signed as %s", st.Sequence, hw.Digest)
	}
	sr.HighWater[fp] = mark{Sequence: st.Sequence, Digest: digest}

	// Quarantine reasons, in a fixed order.
	var reasons []Reason
	var details []string
	if !next.ownsAny(fp) {
		reasons = append(reasons, ReasonNewPublisher)
	}
	if sr.Owner == "" {
		reasons = append(reasons, ReasonNewSkill)
	} else if sr.Owner != fp {
		reasons = append(reasons, ReasonKeyMismatch)
		details = append(details, "owner "+sr.Owner)
	} else if more := escalation(sr.Approved.caps(), sk.Manifest.Capabilities); len(more) > 0 {
		reasons = append(reasons, ReasonNewCapabilities)
		details = append(details, more...)
	}
	if len(auditProblems) > 0 {
		reasons = append(reasons, ReasonAuditFailed)
		details = append(details, auditProblems...)
	}
	if len(reasons) == 0 && (!s.opts.AutoActivate || sr.current(StateDisabled) != nil) {
		reasons = append(reasons, ReasonUpdate)
	}

	now := s.opts.Now().UTC()
	r := &releaseRecord{
		Version: st.Version.String(), Sequence: st.Sequence, Digest: digest, Publisher: fp,
		State: StateQuarantined, Reasons: nonNilReasons(reasons), AuditProblems: nonNil(auditProblems),
		Capabilities: toCaps(sk.Manifest.Capabilities), FirstSeen: now, Changed: now,
	}
	sr.Releases = append(sr.Releases, r)
	rec.Decision, rec.Reasons, rec.Details = decisionQuarantined, reasons, details
	if len(reasons) == 0 {
		sr.activate(r, now)
		rec.Decision = decisionActive
	}
	if err := s.commit(next, rec); err != nil {
		return Release{}, err
	}
	return r.release(id), nil
}

// Promote makes a release active: the one of skill id at version whose
// statement digest is digest, the digest the admin reviewed. It pins the
// id to the release's key if no key owns it yet, and approves the
// release's capabilities; the previous active (or disabled) release is
// superseded. A quarantined or superseded release may be promoted
// (promoting a superseded one is an explicit downgrade, logged as any
// promotion). Promote refuses a digest the release does not have
// (wrong_digest), a release signed by another key than the id's owner
// (key_mismatch: that needs a rotation), and a revoked key or release.
func (s *Store) Promote(id, version string, digest skill.Digest) error {
	return s.change(eventPromote, id, version, digest, func(next *state, sr *skillRecord, r *releaseRecord, now time.Time) error {
		subject := id + "@" + version
		switch {
		case r.State == StateRevoked:
			return refuse(ReasonRevoked, subject, "the release is revoked")
		case r.State == StateActive:
			return refuse(ReasonBadState, subject, "the release is already active")
		case r.State == StateDisabled:
			return refuse(ReasonBadState, subject, "the release is disabled: enable it")
		case sr.Owner != "" && sr.Owner != r.Publisher:
			return refuse(ReasonKeyMismatch, subject, "signed by %s, the id belongs to %s", r.Publisher, sr.Owner)
		case slices.Contains(r.Reasons, ReasonAuditFailed):
			return refuse(ReasonAuditFailed, subject, "the release failed its audit")
		}
		if _, ok := next.RevokedKeys[r.Publisher]; ok {
			return refuse(ReasonKeyRevoked, subject, "signed by a revoked key")
		}
		sr.Owner = r.Publisher
		sr.Approved = r.Capabilities
		sr.activate(r, now)
		return nil
	})
}

// Disable stops the skill's active release from running until Enable.
func (s *Store) Disable(id string) error {
	return s.change(eventDisable, id, "", skill.Digest{}, func(_ *state, sr *skillRecord, _ *releaseRecord, now time.Time) error {
		r := sr.current(StateActive)
		if r == nil {
			return refuse(ReasonNotActive, id, "no active release")
		}
		r.State, r.Changed = StateDisabled, now
		return nil
	})
}

// Enable makes the skill's disabled release active again.
func (s *Store) Enable(id string) error {
	return s.change(eventEnable, id, "", skill.Digest{}, func(_ *state, sr *skillRecord, _ *releaseRecord, now time.Time) error {
		r := sr.current(StateDisabled)
		if r == nil {
			return refuse(ReasonBadState, id, "no disabled release")
		}
		r.State, r.Changed = StateActive, now
		return nil
	})
}

// Remove forgets a release that is quarantined or superseded (an
// active or disabled one must be replaced first; a revoked one is kept as
// evidence). The id's high-water mark and owner stay.
func (s *Store) Remove(id, version string, digest skill.Digest) error {
	return s.change(eventRemove, id, version, digest, func(_ *state, sr *skillRecord, r *releaseRecord, _ time.Time) error {
		if r.State != StateQuarantined && r.State != StateSuperseded {
			return refuse(ReasonBadState, id+"@"+version, "a %s release cannot be removed", r.State)
		}
		sr.Releases = slices.DeleteFunc(sr.Releases, func(x *releaseRecord) bool { return x == r })
		return nil
	})
}

// RevokeKey revokes a publisher key, permanently: every release it
// signed is revoked at once (Active reports it), and Accept and Admit
// refuse its future archives. The ids it owns stay pinned to it.
func (s *Store) RevokeKey(fp skill.Fingerprint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := skill.ParseFingerprint(string(fp)); err != nil {
		return wrap(ReasonInvalid, string(fp), err)
	}
	next := s.st.clone()
	now := s.opts.Now().UTC()
	if _, ok := next.RevokedKeys[string(fp)]; !ok {
		next.RevokedKeys[string(fp)] = now
	}
	next.revoke(func(r *releaseRecord) bool { return r.Publisher == string(fp) }, now)
	return s.commit(next, &AuditRecord{Event: eventRevokeKey, Decision: decisionDone, Publisher: string(fp)})
}

// RevokeRelease revokes a statement digest, permanently, whether or not
// the store holds it yet.
func (s *Store) RevokeRelease(digest skill.Digest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.st.clone()
	now := s.opts.Now().UTC()
	d := digest.String()
	if _, ok := next.RevokedDigests[d]; !ok {
		next.RevokedDigests[d] = now
	}
	next.revoke(func(r *releaseRecord) bool { return r.Digest == d }, now)
	return s.commit(next, &AuditRecord{Event: eventRevokeRelease, Decision: decisionDone, Digest: d})
}

// Active returns the release of id that may run, or an error saying why
// none may: not_found, not_active, disabled, release_revoked or
// key_revoked.
func (s *Store) Active(id string) (Release, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return Release{}, s.broken
	}
	sr := s.st.Skills[id]
	if sr == nil {
		return Release{}, refuse(ReasonNotFound, id, "no such skill")
	}
	r := sr.current("")
	if r == nil {
		return Release{}, refuse(ReasonNotActive, id, "no release was promoted")
	}
	_, keyRevoked := s.st.RevokedKeys[r.Publisher]
	_, digestRevoked := s.st.RevokedDigests[r.Digest]
	switch {
	case keyRevoked:
		return Release{}, refuse(ReasonKeyRevoked, id, "its key is revoked")
	case digestRevoked || r.State == StateRevoked:
		return Release{}, refuse(ReasonRevoked, id, "its release is revoked")
	case r.State == StateDisabled:
		return Release{}, refuse(ReasonDisabled, id, "disabled")
	case r.State != StateActive:
		return Release{}, refuse(ReasonNotActive, id, "no active release")
	}
	return r.release(id), nil
}

// List returns every release the store holds, by id and then sequence.
func (s *Store) List() []Release {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Release
	for id, sr := range s.st.Skills {
		for _, r := range sr.Releases {
			out = append(out, r.release(id))
		}
	}
	slices.SortFunc(out, func(a, b Release) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Sequence, b.Sequence),
			cmp.Compare(a.Publisher, b.Publisher), cmp.Compare(a.Digest.Hex(), b.Digest.Hex()))
	})
	return out
}

// AuditVerify reads the audit log from disk and checks its hash chain,
// and that it ends with the last decision the store made.
func (s *Store) AuditVerify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	f, err := s.openFile(auditName, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return wrap(ReasonAuditChain, auditName, err)
	}
	log, err := parseAudit(data)
	if err != nil {
		return err
	}
	switch {
	case log.committed != len(data):
		return refuse(ReasonAuditChain, auditName, "a torn last line")
	case uint64(len(log.records)) != s.count || log.head() != s.head:
		return refuse(ReasonAuditChain, auditName, "the log does not end with record %d as written", s.count)
	}
	return nil
}

// change runs an admin change on a copy of the state, records it and
// commits it. A refusal is recorded too. version "" means the change is
// about the skill, not one release.
func (s *Store) change(event, id, version string, digest skill.Digest, f func(*state, *skillRecord, *releaseRecord, time.Time) error) error {
	return s.changeDetail(event, id, version, digest, "", f)
}

// changeDetail is change with a detail for the audit record.
func (s *Store) changeDetail(event, id, version string, digest skill.Digest, detail string, f func(*state, *skillRecord, *releaseRecord, time.Time) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if _, err := skill.ParseID(id); err != nil {
		return wrap(ReasonInvalid, id, err)
	}
	rec := &AuditRecord{Event: event, ID: id, Version: version, Decision: decisionDone}
	if detail != "" {
		rec.Details = []string{detail}
	}
	if version != "" {
		rec.Digest = digest.String()
	}
	next := s.st.clone()
	err := func() error {
		sr := next.Skills[id]
		if sr == nil {
			return refuse(ReasonNotFound, id, "no such skill")
		}
		var r *releaseRecord
		if version != "" {
			var sameVersion bool
			for _, x := range sr.Releases {
				if x.Version == version {
					sameVersion = true
					if x.Digest == digest.String() {
						r = x
					}
				}
			}
			switch {
			case r == nil && sameVersion:
				return refuse(ReasonWrongDigest, id+"@"+version, "no release of that version has digest %s", digest)
			case r == nil:
				return refuse(ReasonNotFound, id+"@"+version, "no such release")
			}
			rec.Sequence, rec.Publisher = r.Sequence, r.Publisher
		}
		return f(next, sr, r, s.opts.Now().UTC())
	}()
	if err != nil {
		// Record the refusal; the state stays as it was.
		rec.Decision = decisionRefused
		rec.Reasons = []Reason{err.(*Error).Reason}
		rec.Details = append(rec.Details, err.(*Error).Detail)
		if cerr := s.commit(s.st.clone(), rec); cerr != nil {
			return cerr
		}
		return err
	}
	return s.commit(next, rec)
}

// ownsAny reports whether fp owns a skill id.
func (st *state) ownsAny(fp string) bool {
	for _, sr := range st.Skills {
		if sr.Owner == fp {
			return true
		}
	}
	return false
}

// revoke marks every release that match selects revoked.
func (st *state) revoke(match func(*releaseRecord) bool, now time.Time) {
	for _, sr := range st.Skills {
		for _, r := range sr.Releases {
			if match(r) && r.State != StateRevoked {
				r.State, r.Changed = StateRevoked, now
			}
		}
	}
}

// current returns the current (last promoted) release if it is in state
// want ("" for any state), else nil.
func (sr *skillRecord) current(want State) *releaseRecord {
	if sr.Current == "" {
		return nil
	}
	for _, r := range sr.Releases {
		if r.Digest == sr.Current && (want == "" || r.State == want) {
			return r
		}
	}
	return nil
}

// activate makes r the active release, superseding the current one.
func (sr *skillRecord) activate(r *releaseRecord, now time.Time) {
	if cur := sr.current(""); cur != nil && cur != r && (cur.State == StateActive || cur.State == StateDisabled) {
		cur.State, cur.Changed = StateSuperseded, now
	}
	sr.Current = r.Digest
	r.State, r.Changed = StateActive, now
}

func nonNilReasons(r []Reason) []Reason {
	if r == nil {
		return []Reason{}
	}
	return r
}
