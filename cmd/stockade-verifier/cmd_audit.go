package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/verifier/admin"
)

// auditData is audit's JSON data: the skill as package verify shows it,
// and the audit in the shape the verifier's install answers with.
type auditData struct {
	Skill skillData         `json:"skill"`
	Audit admin.AuditReport `json:"audit"`
}

// printAudit writes an audit report: each module, each check with pass or
// fail, the value found and the limit.
func printAudit(p *printer, rep admin.AuditReport) {
	allowed := "none"
	if len(rep.Allowed) > 0 {
		allowed = list(rep.Allowed)
	}
	p.field("host imports", allowed)
	for _, m := range rep.Modules {
		verdict := "passed"
		if !m.OK {
			verdict = "FAILED"
		}
		p.line("module %s  %s  %s bytes  %s", m.Path, m.SHA256, strconv.FormatInt(m.Size, 10), verdict)
		for _, ch := range m.Checks {
			mark := "pass"
			if !ch.OK {
				mark = "FAIL"
			}
			limit := ""
			if ch.Limit != "" {
				limit = "limit: " + ch.Limit
			}
			p.row("  "+mark, ch.Name, ch.Found, limit)
		}
		p.flush()
		if m.MemoryMaxImposed {
			p.line("  (no maximum memory declared: %s pages imposed)", strconv.FormatUint(uint64(m.MemoryMaxPages), 10))
		}
	}
	if rep.OK {
		p.line("audit passed")
	} else {
		p.line("audit FAILED")
	}
}

// cmdAudit verifies an archive, then audits each module.
func cmdAudit(c *cli, args []string) (*report, error) {
	fs := c.flags(false)
	sig := fs.String("sig", "", "detached signature (default: X.skill.sig)")
	ops, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return nil, err
	}
	sk, err := openArchive(ops[0], *sig)
	if err != nil {
		return nil, err
	}
	// The same audit install runs in the verifier (admin.AuditSkill): every
	// file under modules/, against the host imports the capabilities allow.
	audited, failed := admin.AuditSkill(sk)
	d := auditData{Skill: newSkillData(sk), Audit: audited}
	rep := &report{data: d, human: func(p *printer) {
		p.field("skill", d.Skill.ID+" "+d.Skill.Version)
		p.field("publisher", d.Skill.Publisher)
		p.field("digest", d.Skill.Digest)
		printAudit(p, d.Audit)
	}}
	if !d.Audit.OK {
		rep.outcome, rep.reason = outAuditFailed, "audit_failed"
		rep.message = fmt.Sprintf("audit failed: %d check(s): %s", len(failed), strings.Join(failed, ", "))
	}
	return rep, nil
}
