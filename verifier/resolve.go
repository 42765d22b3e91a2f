package verifier

import (
	"errors"
	"os"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/audit"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/skill"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// resolve answers the broker's resolve: the active release of a skill, its
// manifest, and each module its tools name as a sealed memfd. The store's
// current state is read on every call, so a revocation or a disable stops
// the next resolve; the files are re-hashed on every call (install.Load),
// so a file changed on disk quarantines the release (tampered) instead of
// being served.
//
// Modules travel as memfds sealed against writing, growing and shrinking
// (F_SEAL_WRITE|F_SEAL_GROW|F_SEAL_SHRINK|F_SEAL_SEAL) rather than in
// frames: a module may be 16 MiB, frames are capped at 256 KiB, and a sealed
// memfd is bytes the broker can check without trusting anyone to leave them
// alone. The broker checks the seals and size on arrival and reads and
// hashes the bytes only when it instruments the module; it does not hand
// these memfds on (an executor gets the broker's own memfd of the
// instrumented module).
func (s *Server) resolve(req ipc.ResolveRequest) (*ipc.Resolved, []*os.File, error) {
	if _, err := skill.ParseID(req.ID); err != nil {
		return nil, nil, badRequest("%v", err)
	}
	if req.Version != "" {
		if _, err := skill.ParseVersion(req.Version); err != nil {
			return nil, nil, badRequest("%v", err)
		}
	}
	// A release that changes (promoted over, removed) between the store
	// and the files is looked up again.
	for range 3 {
		res, files, again, err := s.resolveOnce(req)
		if !again {
			return res, files, err
		}
	}
	return nil, nil, ipc.ReasonError(ipc.ReasonInternal, "%s changed while it was resolved", req.ID)
}

// resolveOnce resolves req, or reports again when the release changed
// between the store and the files.
func (s *Server) resolveOnce(req ipc.ResolveRequest) (res *ipc.Resolved, files []*os.File, again bool, err error) {
	s.mu.RLock()
	rel, err := s.store.Active(req.ID)
	if err != nil {
		s.mu.RUnlock()
		return nil, nil, false, err
	}
	if req.Version != "" && rel.Version != req.Version {
		s.mu.RUnlock()
		return nil, nil, false, ipc.ReasonError(ipc.ReasonNotActive, "%s@%s is not the active release (%s is)", req.ID, req.Version, rel.Version)
	}
	inst, loadErr := install.Load(s.skills, rel.Digest)
	if loadErr == nil {
		res, files, err := resolved(rel, inst)
		s.mu.RUnlock()
		return res, files, false, err
	}
	s.mu.RUnlock()
	if !isTampering(loadErr) {
		return nil, nil, false, loadErr // the skills directory itself: not this release's fault
	}

	// The files failed their check. Make sure it is still the active
	// release and still fails, under the exclusive lock, then quarantine.
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.store.Active(req.ID)
	if err != nil || now.Digest != rel.Digest {
		return nil, nil, true, nil
	}
	if _, loadErr = install.Load(s.skills, rel.Digest); loadErr == nil {
		return nil, nil, true, nil
	}
	if !isTampering(loadErr) {
		return nil, nil, false, loadErr
	}
	return nil, nil, false, s.quarantineTampered(rel, loadErr)
}

// isTampering reports whether install.Load refused a release's own files
// (changed, missing, extra, wrong owner or mode) rather than failed on the
// skills directory (unsafe root, I/O) or on a statement that does not parse
// (install.Reason.Tampering).
func isTampering(err error) bool {
	var ie *install.Error
	return errors.As(err, &ie) && ie.Reason.Tampering()
}

// resolved builds the reply for an active release whose files Load just
// verified.
func resolved(rel trust.Release, inst *install.Skill) (*ipc.Resolved, []*os.File, error) {
	mf, ok := inst.File(skill.ManifestPath)
	if !ok {
		return nil, nil, ipc.ReasonError(ipc.ReasonInternal, "%s has no manifest", rel.ID)
	}
	m, err := skill.ParseManifest(mf.Data)
	if err != nil {
		return nil, nil, err
	}
	res := &ipc.Resolved{
		ID: string(rel.ID), Version: rel.Version, Sequence: rel.Sequence,
		Digest: rel.Digest.String(), Publisher: string(rel.Publisher),
		Manifest: ipc.SkillManifest{
			Name: m.Name, Publisher: m.Publisher, Description: m.Description,
			Tools: []ipc.SkillTool{}, Capabilities: wireCaps(m.Capabilities),
			Limits: ipc.SkillLimits{Fuel: m.Limits.Fuel, MemoryBytes: m.Limits.MemoryBytes, TimeoutMS: m.Limits.Timeout.Milliseconds()},
		},
		Modules: []ipc.ResolvedModule{},
	}
	for _, t := range m.Tools {
		res.Manifest.Tools = append(res.Manifest.Tools, ipc.SkillTool{
			Name: t.Name, Module: t.Module, Export: t.Export, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		})
	}
	mods := toolModules(m)
	if len(mods) > ipc.MaxFDs {
		return nil, nil, ipc.ReasonError(ipc.ReasonMalformed, "%s names %d modules; at most %d", rel.ID, len(mods), ipc.MaxFDs)
	}
	memMax := audit.DefaultLimits().MemoryMax
	var files []*os.File
	for _, path := range mods {
		f, ok := inst.File(path)
		if !ok {
			closeAll(files)
			return nil, nil, ipc.ReasonError(ipc.ReasonInternal, "%s: no module %s", rel.ID, path)
		}
		mfd, err := ipc.SealedMemfd("stockade-module:"+path, f.Data)
		if err != nil {
			closeAll(files)
			return nil, nil, err
		}
		files = append(files, mfd)
		res.Modules = append(res.Modules, ipc.ResolvedModule{
			Path: path, SHA256: f.SHA256.String(), Size: f.Size, MemoryLimitPages: memMax,
		})
	}
	return res, files, nil
}
