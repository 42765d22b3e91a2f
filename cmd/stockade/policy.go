package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stockade-dev/stockade/policy"
)

// Administrators' tooling for Cedar policies. It runs locally (no broker):
//
//	stockade policy check [--dir DIR]
//	stockade policy eval [--dir DIR] --principal NAME [--uid N] [--group G]... --tool NAME
//	     [--tool-kind process|skill] [--tier A|B|C] [--egress none|preflight|strict]
//	     [--capability C]... [--action C]... [--skill PUBLISHER/NAME [--skill-version V]
//	     [--skill-trust T] [--skill-capability C]...] [--context JSON|@FILE]
//	stockade policy test [--dir DIR] FILE
//	stockade policy schema
//	stockade policy digest -- ARGV...
//
// Without --dir, the embedded default set is used. Exit codes: check 0 valid,
// 1 invalid; eval 0 allow, 1 deny; test 0 every case passed, 1 a case
// failed; 2 for usage and other errors everywhere.

const policyUsage = `usage:
  stockade policy check [--dir DIR]
  stockade policy eval [--dir DIR] --principal NAME [--uid N] [--group G]... --tool NAME
       [--tool-kind process|skill] [--tier A|B|C] [--egress none|preflight|strict]
       [--capability C]... [--action C]...
       [--skill PUBLISHER/NAME [--skill-version V] [--skill-trust T] [--skill-capability C]...]
       [--context JSON|@FILE]
  stockade policy test [--dir DIR] FILE
  stockade policy schema
  stockade policy digest -- ARGV...

Without --dir the embedded default policies are used. docs/POLICY.md
describes the entity model, the context (--context takes its fields as JSON)
and the test table format.
Exit codes: check 0 valid, 1 invalid; eval 0 allow, 1 deny; test 0 all
passed, 1 a case failed; 2 usage or other errors.
`

const (
	exitPolicyNo    = 1 // invalid set, deny, failed case
	exitPolicyError = 2
)

func cmdPolicy(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, policyUsage)
		return exitPolicyError
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "check":
		return policyCheck(rest)
	case "eval":
		return policyEval(rest)
	case "test":
		return policyTest(rest)
	case "schema":
		if len(rest) != 0 {
			return policyFail(errors.New("schema takes no arguments"))
		}
		os.Stdout.Write(policy.Schema())
		return 0
	case "digest":
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return policyFail(errors.New("digest needs the argv after --"))
		}
		fmt.Println(policy.ArgvDigest(rest))
		return 0
	case "help", "-h", "--help":
		fmt.Print(policyUsage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "stockade policy: unknown command %q\n%s", sub, policyUsage)
		return exitPolicyError
	}
}

func policyFail(err error) int {
	fmt.Fprintf(os.Stderr, "stockade policy: %v\n", err)
	return exitPolicyError
}

func policyFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("stockade policy "+name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, policyUsage) }
	return fs
}

// loadEngine loads dir; on a set that does not load it prints every
// problem, one per line as FILE:LINE:COLUMN: MESSAGE, and returns nil.
func loadEngine(dir string) (*policy.Engine, error) {
	e, err := policy.NewEngine(dir)
	var le *policy.LoadError
	if errors.As(err, &le) {
		base := dir
		if dir == "" {
			base = "default"
		}
		for _, p := range le.Problems {
			if p.File != dir {
				p.File = filepath.Join(base, p.File)
			}
			fmt.Fprintln(os.Stderr, p)
		}
		return nil, fmt.Errorf("%d problem(s) in %s", len(le.Problems), le.Source)
	}
	return e, err
}

func policyCheck(args []string) int {
	fs := policyFlags("check")
	dir := fs.String("dir", "", "policy directory (default: the embedded default set)")
	if err := fs.Parse(args); err != nil {
		return exitPolicyError
	}
	if fs.NArg() != 0 {
		return policyFail(errors.New("check takes no arguments besides --dir"))
	}
	e, err := loadEngine(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stockade policy: %v\n", err)
		return exitPolicyNo
	}
	fmt.Printf("ok: %d policies in %s\n", len(e.PolicyIDs()), e.Source())
	return 0
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func policyEval(args []string) int {
	fs := policyFlags("eval")
	var (
		dir        = fs.String("dir", "", "policy directory (default: the embedded default set)")
		principal  = fs.String("principal", "", "agent name (Agent::\"NAME\")")
		uid        = fs.Uint("uid", 0, "the agent's uid attribute")
		tool       = fs.String("tool", "", "tool name (Tool::\"NAME\")")
		kind       = fs.String("tool-kind", "", "process or skill (default: skill with --skill, else process)")
		tier       = fs.String("tier", "", "the tool's tier A, B or C; the context's tier defaults to it (default C, A for skills)")
		egress     = fs.String("egress", "", "the tool's egress mode: none, preflight or strict (default none)")
		skill      = fs.String("skill", "", "PUBLISHER/NAME of the tool's skill")
		skillVer   = fs.String("skill-version", "", "the skill's version")
		skillTrust = fs.String("skill-trust", "active", "the skill's trust state")
		ctxArg     = fs.String("context", "", "the context as JSON, or @FILE (fields: docs/POLICY.md)")
		groups     listFlag
		caps       listFlag
		actions    listFlag
		skillCaps  listFlag
	)
	fs.Var(&groups, "group", "a group of the agent (repeatable)")
	fs.Var(&caps, "capability", "a capability the tool declares (repeatable)")
	fs.Var(&actions, "action", "a capability the call asks for (repeatable)")
	fs.Var(&skillCaps, "skill-capability", "a capability of the skill (repeatable)")
	if err := fs.Parse(args); err != nil {
		return exitPolicyError
	}
	if fs.NArg() != 0 {
		return policyFail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *principal == "" || *tool == "" {
		return policyFail(errors.New("eval needs --principal and --tool"))
	}
	if *uid > 1<<32-1 {
		return policyFail(errors.New("--uid out of range"))
	}
	spec := policy.CallSpec{
		Principal: *principal, UID: uint32(*uid), Groups: groups,
		Tool: *tool, ToolKind: *kind, ToolTier: *tier, ToolEgress: *egress, ToolCapabilities: caps,
		Actions: actions,
	}
	if *skill != "" {
		pub, name, ok := strings.Cut(*skill, "/")
		if !ok {
			return policyFail(errors.New("--skill must be PUBLISHER/NAME"))
		}
		spec.Skill = &policy.SkillSpec{
			Publisher: pub, Name: name, Version: *skillVer, Trust: *skillTrust, Capabilities: skillCaps,
		}
	}
	if *ctxArg != "" {
		if err := decodeContext(*ctxArg, &spec.Context); err != nil {
			return policyFail(err)
		}
	}
	e, err := loadEngine(*dir)
	if err != nil {
		return policyFail(err)
	}
	req, err := spec.Request(time.Now())
	if err != nil {
		return policyFail(err)
	}
	d := e.Decide(req)
	printDecision(os.Stdout, d)
	for _, r := range d.Reasons() {
		fmt.Fprintf(os.Stderr, "reason: %s\n", r)
	}
	if d.Allowed() {
		return 0
	}
	return exitPolicyNo
}

// decodeContext reads --context strictly: unknown fields are errors.
func decodeContext(arg string, into *policy.ContextSpec) error {
	data := []byte(arg)
	if strings.HasPrefix(arg, "@") {
		f, err := os.Open(arg[1:])
		if err != nil {
			return err
		}
		defer f.Close()
		if data, err = io.ReadAll(io.LimitReader(f, 1<<20+1)); err != nil {
			return err
		}
		if len(data) > 1<<20 {
			return errors.New("--context file over 1 MiB")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("--context: %w", err)
	}
	if dec.More() {
		return errors.New("--context: data after the JSON object")
	}
	return nil
}

func printDecision(w io.Writer, d policy.Decision) {
	if d.Allowed() {
		fmt.Fprintln(w, "allow")
	} else {
		fmt.Fprintln(w, "deny")
	}
	for _, id := range d.Policies() {
		fmt.Fprintf(w, "policy %s\n", id)
	}
}

func policyTest(args []string) int {
	fs := policyFlags("test")
	dir := fs.String("dir", "", "policy directory (default: the table's dir, else the embedded default set)")
	if err := fs.Parse(args); err != nil {
		return exitPolicyError
	}
	if fs.NArg() != 1 {
		return policyFail(errors.New("test needs one table file"))
	}
	table, err := policy.LoadTable(fs.Arg(0))
	if err != nil {
		return policyFail(err)
	}
	if *dir != "" {
		table.Dir = *dir
	}
	e, err := loadEngine(table.Dir)
	if err != nil {
		return policyFail(err)
	}
	failed := 0
	results := table.Run(e, time.Now())
	for _, r := range results {
		if r.Pass {
			fmt.Printf("PASS  %s\n", r.Name)
			continue
		}
		failed++
		fmt.Printf("FAIL  %s: %s\n", r.Name, r.Problem)
		for _, reason := range r.Decision.Reasons() {
			fmt.Printf("      reason: %s\n", reason)
		}
	}
	fmt.Printf("%d passed, %d failed, policies: %s\n", len(results)-failed, failed, e.Source())
	if failed > 0 {
		return exitPolicyNo
	}
	return 0
}
