package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// The commands that drive the running verifier over admin.sock. Each
// checks its arguments' shape here (a typo is a usage error before any
// connection), then lets the verifier decide.

// dial connects to the admin socket.
func (c *cli) dial() (*admin.Client, error) {
	path := c.adminSocket()
	cl, err := admin.Dial(path)
	if err != nil {
		if admin.ReasonOf(err) != "" {
			return nil, err // the verifier answered: denied, another version
		}
		return nil, &dialError{path: path, err: err}
	}
	return cl, nil
}

// online parses a command that takes n operands and dials.
func (c *cli) online(args []string, n int) (*admin.Client, []string, error) {
	ops, err := c.parse(c.flags(true), args, n, n)
	if err != nil {
		return nil, nil, err
	}
	cl, err := c.dial()
	return cl, ops, err
}

func cmdStatus(c *cli, args []string) (*report, error) {
	cl, _, err := c.online(args, 0)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	st, err := cl.Status()
	if err != nil {
		return nil, err
	}
	return &report{data: st, human: func(p *printer) { printStatus(p, st) }}, nil
}

func printStatus(p *printer, st ipc.RoleStatus) {
	p.field("role", st.Role)
	p.field("software", st.Software)
	p.field("pid", strconv.Itoa(st.PID))
	p.field("uptime", (time.Duration(st.UptimeMS) * time.Millisecond).String())
}

// cmdInstall opens the archive and its signature itself and hands both to
// the verifier as descriptors: the verifier opens no path an admin names.
func cmdInstall(c *cli, args []string) (*report, error) {
	fs := c.flags(true)
	sig := fs.String("sig", "", "detached signature (default: X.skill.sig)")
	ops, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return nil, err
	}
	if *sig == "" {
		*sig = ops[0] + ".sig"
	}
	archive, err := openRegular(ops[0])
	if err != nil {
		return nil, err
	}
	defer archive.Close()
	sigf, err := openRegular(*sig)
	if err != nil {
		return nil, err
	}
	defer sigf.Close()
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	r, err := cl.Install(archive, sigf)
	if err != nil {
		return nil, err
	}
	return releaseReport(r), nil
}

// openRegular opens path for reading, refusing anything but a regular
// file (a FIFO would block the verifier, a device would feed it forever).
// It opens without blocking (a FIFO with no writer would block open
// itself); O_NONBLOCK changes nothing for the reads of a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = usagef(fmt.Sprintf("%s is not a regular file", path))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func cmdList(c *cli, args []string) (*report, error) {
	cl, _, err := c.online(args, 0)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rels, err := cl.List()
	if err != nil {
		return nil, err
	}
	if rels == nil {
		rels = []admin.Release{}
	}
	for i := range rels {
		normRelease(&rels[i])
	}
	return &report{data: map[string]any{"releases": rels}, human: func(p *printer) {
		if len(rels) == 0 {
			p.line("no releases")
			return
		}
		p.row("ID", "VERSION", "SEQUENCE", "STATE", "DIGEST", "REASONS")
		for _, r := range rels {
			p.row(r.ID, r.Version, strconv.FormatUint(r.Sequence, 10), r.State, r.Digest, list(r.Reasons))
		}
	}}, nil
}

func cmdShow(c *cli, args []string) (*report, error) {
	ops, err := c.parse(c.flags(true), args, 1, 1)
	if err != nil {
		return nil, err
	}
	if err := checkID(ops[0]); err != nil {
		return nil, err
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	info, err := cl.Show(ops[0])
	if err != nil {
		return nil, err
	}
	normInfo(&info)
	return &report{data: info, human: func(p *printer) {
		p.field("skill", info.ID)
		owner := info.Owner
		if owner == "" {
			owner = "(none: no release promoted yet)"
		}
		p.field("owner key", owner)
		cur := info.Current
		if cur == "" {
			cur = "-"
		}
		p.field("current", cur)
		printCaps(p, "approved", info.Approved)
		for _, h := range info.HighWater {
			p.field("high water", strconv.FormatUint(h.Sequence, 10)+" by "+h.Publisher+" ("+h.Digest+")")
		}
		for _, e := range info.Equivocations {
			p.field("EQUIVOCATION", "sequence "+strconv.FormatUint(e.Sequence, 10)+" by "+e.Publisher+": kept "+e.Kept+", refused "+e.Refused+" at "+e.Time)
		}
		for _, r := range info.Releases {
			p.line("")
			printRelease(p, r)
		}
	}}, nil
}

// splitAt splits "ID@REST" and checks the id.
func splitAt(s, what string) (string, string, error) {
	id, rest, ok := strings.Cut(s, "@")
	if !ok || rest == "" {
		return "", "", usagef(fmt.Sprintf("%q: want %s", s, what))
	}
	if err := checkID(id); err != nil {
		return "", "", err
	}
	return id, rest, nil
}

func checkID(id string) error {
	if _, err := skill.ParseID(id); err != nil {
		return usagef(fmt.Sprintf("%q is not a skill id (publisher.name, lower case)", id))
	}
	return nil
}

func checkVersion(v string) error {
	if _, err := skill.ParseVersion(v); err != nil {
		return usagef(fmt.Sprintf("%q is not a version (semver: MAJOR.MINOR.PATCH)", v))
	}
	return nil
}

func checkDigest(d string) error {
	if _, err := skill.ParseDigest(d); err != nil {
		return usagef(fmt.Sprintf("%q is not a digest (sha256: and 64 lower-case hex digits)", d))
	}
	return nil
}

func cmdPromote(c *cli, args []string) (*report, error) {
	fs := c.flags(true)
	digest := fs.String("digest", "", "the statement digest reviewed (sha256:...; install and show print it)")
	ops, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return nil, err
	}
	id, version, err := splitAt(ops[0], "ID@VERSION")
	if err != nil {
		return nil, err
	}
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	if *digest == "" {
		return nil, usagef("promote: --digest is required: name the exact release you reviewed")
	}
	if err := checkDigest(*digest); err != nil {
		return nil, err
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	r, err := cl.Promote(id, version, *digest)
	if err != nil {
		return nil, err
	}
	return releaseReport(r), nil
}

// done is the report of a change that answers nothing.
func done(what string, data map[string]string) *report {
	return &report{data: data, human: func(p *printer) { p.line("%s", what) }}
}

func cmdDisable(c *cli, args []string) (*report, error) { return skillChange(c, args, "disabled") }
func cmdEnable(c *cli, args []string) (*report, error)  { return skillChange(c, args, "enabled") }

func skillChange(c *cli, args []string, verb string) (*report, error) {
	ops, err := c.parse(c.flags(true), args, 1, 1)
	if err != nil {
		return nil, err
	}
	if err := checkID(ops[0]); err != nil {
		return nil, err
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if verb == "disabled" {
		err = cl.Disable(ops[0])
	} else {
		err = cl.Enable(ops[0])
	}
	if err != nil {
		return nil, err
	}
	return done(ops[0]+" "+verb, map[string]string{"id": ops[0]}), nil
}

func cmdRemove(c *cli, args []string) (*report, error) {
	fs := c.flags(true)
	digest := fs.String("digest", "", "the release's statement digest (needed when two releases share the version)")
	ops, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return nil, err
	}
	id, version, err := splitAt(ops[0], "ID@VERSION")
	if err != nil {
		return nil, err
	}
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	if *digest != "" {
		if err := checkDigest(*digest); err != nil {
			return nil, err
		}
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := cl.Remove(id, version, *digest); err != nil {
		return nil, err
	}
	return done(id+"@"+version+" removed", map[string]string{"id": id, "version": version, "digest": *digest}), nil
}

func cmdRevokeKey(c *cli, args []string) (*report, error) {
	ops, err := c.parse(c.flags(true), args, 1, 1)
	if err != nil {
		return nil, err
	}
	if _, err := skill.ParseFingerprint(ops[0]); err != nil {
		return nil, usagef(fmt.Sprintf("%q is not a key fingerprint (ed25519:SHA256:...)", ops[0]))
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := cl.RevokeKey(ops[0]); err != nil {
		return nil, err
	}
	return done("key "+ops[0]+" revoked: its releases no longer run, its archives are refused", map[string]string{"fingerprint": ops[0]}), nil
}

func cmdRevokeSkill(c *cli, args []string) (*report, error) {
	ops, err := c.parse(c.flags(true), args, 1, 1)
	if err != nil {
		return nil, err
	}
	id, digest, err := splitAt(ops[0], "ID@DIGEST")
	if err != nil {
		return nil, err
	}
	if err := checkDigest(digest); err != nil {
		return nil, err
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := cl.RevokeSkill(id, digest); err != nil {
		return nil, err
	}
	return done(id+"@"+digest+" revoked", map[string]string{"id": id, "digest": digest}), nil
}

func cmdTrustList(c *cli, args []string) (*report, error) {
	cl, _, err := c.online(args, 0)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	keys, err := cl.TrustList()
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []admin.Key{}
	}
	for i := range keys {
		normKey(&keys[i])
	}
	return &report{data: map[string]any{"keys": keys}, human: func(p *printer) {
		if len(keys) == 0 {
			p.line("no keys")
			return
		}
		p.row("FINGERPRINT", "RELEASES", "REVOKED", "SKILLS")
		for _, k := range keys {
			rev := "no"
			if k.Revoked {
				rev = "yes " + k.RevokedAt
			}
			p.row(k.Fingerprint, strconv.Itoa(k.Releases), rev, list(k.Skills))
		}
	}}, nil
}

func cmdTrustImportRotation(c *cli, args []string) (*report, error) {
	ops, err := c.parse(c.flags(true), args, 1, 1)
	if err != nil {
		return nil, err
	}
	// The verifier refuses a larger envelope; say so before dialling.
	env, err := readLimited(ops[0], skill.MaxRotationBytes)
	if err != nil {
		return nil, err
	}
	if len(env) > skill.MaxRotationBytes {
		return nil, &admin.Error{Reason: admin.ReasonMalformed, Message: fmt.Sprintf("%s is larger than %d bytes", ops[0], skill.MaxRotationBytes)}
	}
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	k, err := cl.ImportRotation(env)
	if err != nil {
		return nil, err
	}
	normKey(&k)
	return &report{data: k, human: func(p *printer) {
		p.line("rotation imported")
		p.field("new key", k.Fingerprint)
		p.field("skills", list(k.Skills))
	}}, nil
}

func cmdDoctor(c *cli, args []string) (*report, error) {
	cl, _, err := c.online(args, 0)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	d, err := cl.Doctor()
	if err != nil {
		return nil, err
	}
	normDoctor(&d)
	rep := &report{data: d, human: func(p *printer) {
		p.field("audit log", strconv.FormatUint(d.AuditRecords, 10)+" records")
		if len(d.Releases) > 0 {
			p.row("ID", "VERSION", "STATE", "FILES", "DIGEST")
		}
		for _, r := range d.Releases {
			p.row(r.ID, r.Version, r.State, r.Files, r.Digest)
		}
		p.flush()
		for _, pr := range d.Problems {
			p.field("PROBLEM", pr.Kind+" "+pr.Subject+": "+pr.Detail)
		}
		if d.OK {
			p.line("store healthy")
		}
	}}
	if !d.OK {
		rep.outcome, rep.reason = outDamaged, "doctor"
		rep.message = fmt.Sprintf("doctor found %d problem(s)", len(d.Problems))
	}
	return rep, nil
}
