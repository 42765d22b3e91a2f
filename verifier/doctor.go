package verifier

import (
	"errors"
	"os"
	"strings"

	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/skill"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// Doctor checks the verifier's state and changes nothing: the audit log's
// chain and its end (trust.AuditVerify; state.json was checked field by
// field when the store opened), every release the store holds against its
// files on disk (install.Load re-hashes every file against the signed
// statement), and the skills directory for releases the store does not
// hold and leftovers of interrupted installs. A revoked release may have
// no files; any other must have them whole.
func (s *Server) Doctor() admin.DoctorReport {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rep := admin.DoctorReport{Releases: []admin.DoctorRelease{}, Problems: []admin.Problem{}}
	problem := func(kind, subject, detail string) {
		rep.Problems = append(rep.Problems, admin.Problem{Kind: kind, Subject: subject, Detail: detail})
	}
	if err := s.store.AuditVerify(); err != nil {
		kind := admin.ProblemStore
		if errors.Is(err, trust.ReasonAuditChain) {
			kind = admin.ProblemAuditChain
		}
		problem(kind, TrustDir, err.Error())
	}
	rep.AuditRecords = s.store.AuditRecords()

	held := map[skill.Digest]bool{}
	for _, r := range s.store.List() {
		held[r.Digest] = true
		dr := admin.DoctorRelease{ID: string(r.ID), Version: r.Version, Digest: r.Digest.String(), State: string(r.State), Files: admin.FilesVerified}
		subject := string(r.ID) + "@" + r.Version
		if _, err := install.Load(s.skills, r.Digest); err != nil {
			switch {
			case errors.Is(err, install.ReasonNotInstalled) && r.State == trust.StateRevoked:
				dr.Files = admin.FilesAbsent
			case errors.Is(err, install.ReasonNotInstalled):
				dr.Files = admin.FilesMissing
				problem(admin.ProblemMissing, subject, err.Error())
			case errors.Is(err, install.ReasonRootUnsafe) || errors.Is(err, install.ReasonIO):
				dr.Files = admin.FilesMissing
				problem(admin.ProblemStore, subject, err.Error())
			default:
				// install.Reason.Tampering, and also install.ReasonInvalid:
				// a statement on disk that hashes to the digest but does
				// not parse. resolve and the wire call that internal, not
				// tampering (nothing to quarantine: the bytes are the
				// signed ones); Doctor reports it as tampered so that an
				// admin looks. Deliberately not unified with isTampering.
				dr.Files = admin.FilesTampered
				problem(admin.ProblemTampered, subject, err.Error())
			}
		}
		rep.Releases = append(rep.Releases, dr)
	}

	entries, err := os.ReadDir(s.skills)
	if err != nil {
		problem(admin.ProblemStore, SkillsDir, err.Error())
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			problem(admin.ProblemLeftover, name, "left by an interrupted install or removal; removed at the next start")
			continue
		}
		d, err := skill.ParseDigest("sha256:" + name)
		switch {
		case err != nil:
			problem(admin.ProblemOrphan, name, "not a release directory")
		case !held[d]:
			problem(admin.ProblemOrphan, d.String(), "installed, but the trust store does not hold the release; removed at the next start")
		}
	}
	rep.OK = len(rep.Problems) == 0
	return rep
}

// orphans lists the installed releases the store does not hold.
func (s *Server) orphans() ([]skill.Digest, error) {
	installed, err := install.List(s.skills)
	if err != nil {
		return nil, err
	}
	held := map[skill.Digest]bool{}
	for _, r := range s.store.List() {
		held[r.Digest] = true
	}
	var out []skill.Digest
	for _, d := range installed {
		if !held[d] {
			out = append(out, d)
		}
	}
	return out, nil
}
