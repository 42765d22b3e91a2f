package verifier

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/skill"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// The admin operations. Each state change holds s.mu exclusively from the
// first write to the last, so that a resolve or a doctor never sees a
// release between its files and its store record.
//
// Install writes the files first and the store record second:
//
//	skill.Open (signature, archive hash, then the ZIP) → audit → install.Install
//	(staging dir, fsync, rename) → trust.Admit (audit log, then state.json)
//
// A crash before the rename leaves a staging directory (install.Clean
// removes it at start-up); after it and before Admit commits, an installed
// release the store does not hold (New removes it); after Admit, a whole
// release. Admit refusing (rollback, equivocation, revoked) removes the
// files again, and a crash before that removal is the previous case. Remove
// goes the other way, the store first and the files second, for the same
// reason. So a crash at any point leaves the store and the skills directory
// consistent once New has run, and doctor clean.

// readDescriptor reads a file an admin passed by descriptor: a regular file
// (a pipe, socket or device is refused), read from offset 0 with pread up
// to limit+1 bytes, so that skill.Open sees an oversized file as oversized.
// The verifier never opens a path an admin names.
func readDescriptor(f *os.File, limit int64, what string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, badRequest("the %s descriptor: %v", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, badRequest("the %s is not a regular file", what)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, limit+1))
	if err != nil {
		return nil, badRequest("reading the %s: %v", what, err)
	}
	return b, nil
}

// toolModules returns the modules a manifest's tools name, each once,
// sorted: what resolve hands the broker.
func toolModules(m *skill.Manifest) []string {
	var mods []string
	for _, t := range m.Tools {
		mods = append(mods, t.Module)
	}
	slices.Sort(mods)
	return slices.Compact(mods)
}

func (s *Server) install(_ context.Context, af, sf *os.File) (admin.Release, error) {
	lim := skill.DefaultLimits()
	archive, err := readDescriptor(af, lim.ArchiveBytes, "archive")
	if err != nil {
		return admin.Release{}, err
	}
	sig, err := readDescriptor(sf, lim.EnvelopeBytes, "signature")
	if err != nil {
		return admin.Release{}, err
	}
	sk, err := skill.Open(archive, sig, s.store.Accept)
	if err != nil {
		return admin.Release{}, err
	}
	if n := len(toolModules(sk.Manifest)); n > ipc.MaxFDs {
		return admin.Release{}, ipc.ReasonError(ipc.ReasonMalformed, "the tools name %d modules; at most %d", n, ipc.MaxFDs)
	}
	report, problems := admin.AuditSkill(sk)

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.place(sk); err != nil {
		return admin.Release{}, err
	}
	rel, err := s.store.Admit(sk, problems)
	if err != nil {
		if _, held := s.store.Release(string(sk.Statement.ID), sk.StatementDigest); !held {
			if rerr := install.Remove(s.skills, sk.StatementDigest); rerr != nil {
				s.log.Error("removing a refused release", "digest", sk.StatementDigest.String(), "err", rerr)
			}
		}
		return admin.Release{}, err
	}
	out := wireRelease(rel)
	out.Audit = &report
	return out, nil
}

// place installs sk's files. A directory already there that fails its
// check (tampered, or half-removed by hand) is replaced from the verified
// archive: that is how an admin repairs a release resolve quarantined.
func (s *Server) place(sk *skill.Skill) error {
	_, err := install.Install(s.skills, sk)
	if err == nil || !isTampering(err) {
		return err
	}
	s.log.Warn("replacing a damaged installed release", "digest", sk.StatementDigest.String(), "err", err)
	if err := install.Remove(s.skills, sk.StatementDigest); err != nil {
		return err
	}
	_, err = install.Install(s.skills, sk)
	return err
}

func (s *Server) list() admin.ReleaseList {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := admin.ReleaseList{Releases: []admin.Release{}}
	for _, r := range s.store.List() {
		out.Releases = append(out.Releases, wireRelease(r))
	}
	return out
}

func (s *Server) show(id string) (admin.SkillInfo, error) {
	if _, err := skill.ParseID(id); err != nil {
		return admin.SkillInfo{}, badRequest("%v", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := s.store.Skill(id)
	if err != nil {
		return admin.SkillInfo{}, err
	}
	out := admin.SkillInfo{
		ID: id, Owner: string(v.Owner), Approved: wireCaps(v.Approved),
		HighWater: []admin.HighWater{}, Releases: []admin.Release{}, Equivocations: []admin.Equivocation{},
	}
	if v.HasCurrent {
		out.Current = v.Current.String()
	}
	for _, h := range v.HighWater {
		out.HighWater = append(out.HighWater, admin.HighWater{Publisher: string(h.Publisher), Sequence: h.Sequence, Digest: h.Digest.String()})
	}
	for _, r := range v.Releases {
		out.Releases = append(out.Releases, wireRelease(r))
	}
	for _, e := range v.Equivocations {
		out.Equivocations = append(out.Equivocations, admin.Equivocation{
			Sequence: e.Sequence, Publisher: string(e.Publisher), Kept: e.Kept.String(),
			Refused: e.Refused.String(), Time: timeString(e.Time),
		})
	}
	return out, nil
}

func (s *Server) promote(req admin.ReleaseRef) (admin.Release, error) {
	d, err := skill.ParseDigest(req.Digest)
	if err != nil {
		return admin.Release{}, badRequest("digest: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The files must still be what was signed before the release may run.
	if rel, ok := s.store.Release(req.ID, d); ok && rel.Version == req.Version && rel.State != trust.StateRevoked {
		if _, err := install.Load(s.skills, d); err != nil {
			if !isTampering(err) {
				return admin.Release{}, err
			}
			return admin.Release{}, s.quarantineTampered(rel, err)
		}
	}
	if err := s.store.Promote(req.ID, req.Version, d); err != nil {
		return admin.Release{}, err
	}
	rel, _ := s.store.Release(req.ID, d)
	return wireRelease(rel), nil
}

// quarantineTampered takes a release whose files failed install.Load out of
// service (a trust-store state change, audit-logged with the reason
// tampered) and returns the refusal to send. Call with s.mu held.
func (s *Server) quarantineTampered(rel trust.Release, loadErr error) error {
	s.log.Error("installed files differ from the signed statement: quarantining",
		"skill", rel.ID, "version", rel.Version, "digest", rel.Digest.String(), "err", loadErr)
	if _, err := s.store.Quarantine(string(rel.ID), rel.Digest, trust.ReasonTampered, loadErr.Error()); err != nil {
		s.log.Error("quarantining a tampered release", "digest", rel.Digest.String(), "err", err)
		if !errors.Is(err, trust.ReasonRevoked) {
			return err
		}
	}
	return ipc.ReasonError(ipc.ReasonTampered, "%s@%s: installed files differ from the signed statement; the release is quarantined (install the archive again to repair it): %v",
		rel.ID, rel.Version, loadErr)
}

func (s *Server) setEnabled(id string, enable bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if enable {
		return s.store.Enable(id)
	}
	return s.store.Disable(id)
}

func (s *Server) remove(req admin.ReleaseRef) error {
	if _, err := skill.ParseID(req.ID); err != nil {
		return badRequest("%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var d skill.Digest
	if req.Digest != "" {
		var err error
		if d, err = skill.ParseDigest(req.Digest); err != nil {
			return badRequest("digest: %v", err)
		}
	} else {
		var found []skill.Digest
		for _, r := range s.store.List() {
			if string(r.ID) == req.ID && r.Version == req.Version {
				found = append(found, r.Digest)
			}
		}
		switch len(found) {
		case 0:
			return ipc.ReasonError(ipc.ReasonNotFound, "no release %s@%s", req.ID, req.Version)
		case 1:
			d = found[0]
		default:
			return badRequest("%d releases of %s@%s: name the digest", len(found), req.ID, req.Version)
		}
	}
	if err := s.store.Remove(req.ID, req.Version, d); err != nil {
		return err
	}
	if err := install.Remove(s.skills, d); err != nil && !errors.Is(err, install.ReasonNotInstalled) {
		// The store no longer holds it: start-up removes it if this fails.
		s.log.Error("removing the files of a removed release", "digest", d.String(), "err", err)
	}
	return nil
}

func (s *Server) revokeKey(fp string) error {
	f, err := skill.ParseFingerprint(fp)
	if err != nil {
		return badRequest("fingerprint: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store.RevokeKey(f)
}

func (s *Server) revokeSkill(req admin.ReleaseRef) error {
	if _, err := skill.ParseID(req.ID); err != nil {
		return badRequest("%v", err)
	}
	d, err := skill.ParseDigest(req.Digest)
	if err != nil {
		return badRequest("digest: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.store.List() {
		if r.Digest == d && string(r.ID) != req.ID {
			return badRequest("%s is a release of %s, not %s", d, r.ID, req.ID)
		}
	}
	return s.store.RevokeRelease(d)
}

func (s *Server) trustList() admin.KeyList {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := admin.KeyList{Keys: []admin.Key{}}
	for _, k := range s.store.Keys() {
		out.Keys = append(out.Keys, wireKey(k))
	}
	return out
}

func wireKey(k trust.KeyView) admin.Key {
	out := admin.Key{Fingerprint: string(k.Fingerprint), Skills: []string{}, Releases: k.Releases, Revoked: k.Revoked}
	for _, id := range k.Skills {
		out.Skills = append(out.Skills, string(id))
	}
	if k.Revoked {
		out.RevokedAt = timeString(k.RevokedAt)
	}
	return out
}

func (s *Server) importRotation(envelope []byte) (admin.Key, error) {
	r, err := skill.OpenRotation(envelope)
	if err != nil {
		return admin.Key{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	moved, err := s.store.Rotate(r)
	if err != nil {
		return admin.Key{}, err
	}
	s.log.Info("key rotated", "old", string(r.Old), "new", string(r.New), "skills", moved)
	for _, k := range s.store.Keys() {
		if k.Fingerprint == r.New {
			return wireKey(k), nil
		}
	}
	return admin.Key{}, ipc.ReasonError(ipc.ReasonInternal, "the new key is not in the store after the rotation")
}
