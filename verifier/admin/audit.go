package admin

import (
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/verifier/audit"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// AuditSkill audits every module of a verified skill (every file under
// modules/) against the host imports its manifest's capabilities allow
// (audit.HostImports) and the default limits. It returns the report and
// the problems, one "<module path>: <check>" per failed check, which the
// trust store records (audit_failed). The verifier runs it on install;
// the CLI's offline `audit` command runs the same function.
func AuditSkill(sk *skill.Skill) (AuditReport, []string) {
	allowed := audit.HostImports(sk.Manifest.Capabilities)
	rep := AuditReport{OK: true, Allowed: []string{}, Modules: []ModuleAudit{}}
	for imp := range allowed {
		rep.Allowed = append(rep.Allowed, imp.Module+"."+imp.Name)
	}
	slices.Sort(rep.Allowed)
	var problems []string
	limits := audit.DefaultLimits()
	for _, f := range sk.Files {
		if !strings.HasPrefix(f.Path, "modules/") {
			continue
		}
		r := audit.Audit(f.Data, allowed, limits)
		m := ModuleAudit{
			Path: f.Path, SHA256: f.SHA256.String(), Size: f.Size, OK: r.OK(),
			Checks: make([]Check, len(r.Checks)), MemoryMaxPages: r.MemoryMaxPages, MemoryMaxImposed: r.MemoryMaxImposed,
		}
		for i, c := range r.Checks {
			m.Checks[i] = Check{Name: c.Name, OK: c.OK, Found: c.Found, Limit: c.Limit}
		}
		for _, name := range r.Failed() {
			problems = append(problems, f.Path+": "+name)
		}
		rep.OK = rep.OK && m.OK
		rep.Modules = append(rep.Modules, m)
	}
	return rep, problems
}
