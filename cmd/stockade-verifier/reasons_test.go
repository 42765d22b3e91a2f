package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/skill"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// reasonConstants returns the value of every exported package-level
// constant of the package in dir that is a reason: declared with a type
// named Reason, or named Reason* (the convention of all four packages).
// Values are string literals, conversions Reason("x"), or references to
// such constants here or in package ipc (admin's aliases). A reason
// constant this reader cannot evaluate fails the test rather than being
// skipped. Adding a reason to one of the packages without mapping it here
// fails TestEveryReasonMapped.
func reasonConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	ipcConsts := map[string]string{}
	if filepath.Base(dir) != "ipc" {
		ipcConsts = reasonConstants(t, filepath.Join("..", "..", "ipc"))
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type spec struct {
		name  string
		typed bool
		value ast.Expr
	}
	var specs []spec
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					typed := isReasonType(vs.Type)
					for i, n := range vs.Names {
						if !n.IsExported() || (!typed && !strings.HasPrefix(n.Name, "Reason")) {
							continue
						}
						if i >= len(vs.Values) {
							t.Fatalf("%s: const %s has no value this test can read", dir, n.Name)
						}
						specs = append(specs, spec{n.Name, typed, vs.Values[i]})
					}
				}
			}
		}
	}
	out := map[string]string{}
	for range specs { // resolve references in any order
		for _, sp := range specs {
			if _, done := out[sp.name]; done {
				continue
			}
			if v, ok := constValue(sp.value, out, ipcConsts); ok {
				out[sp.name] = v
			}
		}
	}
	for _, sp := range specs {
		if _, ok := out[sp.name]; !ok {
			t.Fatalf("%s: cannot evaluate reason constant %s", dir, sp.name)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no Reason constants found", dir)
	}
	return out
}

func isReasonType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "Reason"
	case *ast.SelectorExpr:
		return e.Sel.Name == "Reason"
	}
	return false
}

func constValue(e ast.Expr, local, ipcConsts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := local[e.Name]
		return v, ok
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "ipc" {
			v, ok := ipcConsts[e.Sel.Name]
			return v, ok
		}
	case *ast.CallExpr:
		if len(e.Args) == 1 && isReasonType(e.Fun) {
			return constValue(e.Args[0], local, ipcConsts)
		}
	case *ast.ParenExpr:
		return constValue(e.X, local, ipcConsts)
	}
	return "", false
}

// TestEveryReasonMapped: every reason code of verifier/skill, trust,
// install and admin (with ipc's) maps to an outcome, and to the one its
// class says where the package gives one.
func TestEveryReasonMapped(t *testing.T) {
	t.Parallel()
	for name, v := range reasonConstants(t, "../../verifier/skill") {
		o, ok := skillOutcomes[skill.Reason(v)]
		if !ok {
			t.Errorf("skill.%s (%q) has no outcome in skillOutcomes", name, v)
			continue
		}
		want := map[skill.Class]outcome{skill.ClassInvalid: outInvalid, skill.ClassMalformed: outMalformed, skill.ClassRefused: outRevoked}[skill.Reason(v).Class()]
		if o != want {
			t.Errorf("skill.%s: outcome %s; its class %s says %s", name, o, skill.Reason(v).Class(), want)
		}
	}
	for name, v := range reasonConstants(t, "../../verifier/trust") {
		if _, ok := trustOutcomes[trust.Reason(v)]; !ok {
			t.Errorf("trust.%s (%q) has no outcome in trustOutcomes", name, v)
		}
	}
	for name, v := range reasonConstants(t, "../../verifier/install") {
		if _, ok := installOutcomes[install.Reason(v)]; !ok {
			t.Errorf("install.%s (%q) has no outcome in installOutcomes", name, v)
		}
	}
	for name, v := range reasonConstants(t, "../../verifier/admin") {
		if _, ok := adminOutcomes[admin.Reason(v)]; !ok {
			t.Errorf("admin.%s (%q) has no outcome in adminOutcomes", name, v)
		}
	}
	for _, r := range ipc.Reasons() {
		if _, ok := adminOutcomes[r]; !ok {
			t.Errorf("ipc reason %q has no outcome in adminOutcomes", r)
		}
	}
}

// TestNoStaleMappings: a table entry for a reason that no longer exists
// is a mistake too (a renamed code would otherwise go unmapped silently).
func TestNoStaleMappings(t *testing.T) {
	t.Parallel()
	values := func(dir string) map[string]bool {
		m := map[string]bool{}
		for _, v := range reasonConstants(t, dir) {
			m[v] = true
		}
		return m
	}
	check := func(pkg string, have map[string]bool, keys []string) {
		for _, k := range keys {
			if !have[k] {
				t.Errorf("%s mapping for %q, which %s no longer defines", pkg, k, pkg)
			}
		}
	}
	check("skill", values("../../verifier/skill"), keysOf(skillOutcomes))
	check("trust", values("../../verifier/trust"), keysOf(trustOutcomes))
	check("install", values("../../verifier/install"), keysOf(installOutcomes))
	check("admin", values("../../verifier/admin"), keysOf(adminOutcomes))
}

func keysOf[R ~string](m map[R]outcome) []string {
	var out []string
	for k := range m {
		out = append(out, string(k))
	}
	return out
}

// TestOutcomesDocumented: the exit-code table in exitcode.go's comment and
// in docs/SKILLS.md lists every outcome with its number and name, and
// nothing else.
func TestOutcomesDocumented(t *testing.T) {
	src, err := os.ReadFile("exitcode.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "SKILLS.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "## The admin CLI: stockade-verifier")
	if start < 0 {
		t.Fatal("docs/SKILLS.md has no section \"## The admin CLI: stockade-verifier\"")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	comment := regexp.MustCompile(`(?m)^//\t(\d+) +([a-z_]+) `)
	markdown := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([a-z_]+)` \\|")
	for _, tc := range []struct {
		where string
		re    *regexp.Regexp
		text  string
	}{{"exitcode.go", comment, string(src)}, {"docs/SKILLS.md", markdown, section}} {
		got := map[int]string{}
		for _, m := range tc.re.FindAllStringSubmatch(tc.text, -1) {
			n, _ := strconv.Atoi(m[1])
			got[n] = m[2]
		}
		for o := outOK; o <= outInternal; o++ {
			if got[o.code()] != o.String() {
				t.Errorf("%s: exit code %d documented as %q; want %q", tc.where, o.code(), got[o.code()], o)
			}
		}
		if len(got) != int(outInternal)+1 {
			t.Errorf("%s documents %d exit codes; want %d", tc.where, len(got), int(outInternal)+1)
		}
	}
}

// TestOutcomeOf covers the errors that come from neither package's table.
func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want outcome
	}{
		{nil, outOK},
		{usagef("x"), outUsage},
		{&skill.Error{Reason: skill.ReasonSignature}, outInvalid},
		{fmt.Errorf("wrapped: %w", &skill.Error{Reason: skill.ReasonOverlap}), outMalformed},
		{&trust.Error{Reason: trust.ReasonEquivocation}, outRollback},
		{&admin.Error{Reason: admin.ReasonDenied}, outDenied},
		{&admin.Error{Reason: admin.ReasonWrongDigest}, outWrongDigest},
		{&admin.Error{Reason: "something new"}, outInternal},
		{&install.Error{Reason: install.ReasonDigest}, outDamaged},
		{fmt.Errorf("k: %w", errWrongPassphrase), outInvalid},
		{fmt.Errorf("k: %w", errKeyFileFormat), outMalformed},
		{errNoTerminal, outUsage},
		{&dialError{path: "/x", err: os.ErrNotExist}, outUnavailable},
		{&os.PathError{Op: "open", Path: "x", Err: os.ErrNotExist}, outNotFound},
		{&os.PathError{Op: "open", Path: "x", Err: os.ErrExist}, outConflict},
		{&os.PathError{Op: "open", Path: "x", Err: os.ErrPermission}, outUnavailable},
		{ipc.Errorf(ipc.ClassDenied, "no"), outDenied},
		{errors.New("who knows"), outInternal},
	} {
		if got, _ := outcomeOf(tc.err); got != tc.want {
			t.Errorf("outcomeOf(%v) = %s; want %s", tc.err, got, tc.want)
		}
	}
}

// TestReleaseOutcome: an installed release's state and reasons give the
// exit code, the weightiest reason winning.
func TestReleaseOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state   string
		reasons []string
		want    outcome
		why     string
	}{
		{"active", nil, outOK, ""},
		{"quarantined", []string{"new_publisher", "new_skill"}, outUntrusted, "new_publisher"},
		{"quarantined", []string{"new_capabilities", "audit_failed"}, outAuditFailed, "audit_failed"},
		{"quarantined", []string{"audit_failed", "key_mismatch"}, outKeyMismatch, "key_mismatch"},
		{"quarantined", []string{"tampered"}, outDamaged, "tampered"},
		{"quarantined", []string{"update"}, outUntrusted, "update"},
		{"quarantined", nil, outUntrusted, "quarantined"},
		{"revoked", []string{"new_skill"}, outRevoked, "release_revoked"},
		{"disabled", nil, outUntrusted, "disabled"},
		{"superseded", nil, outUntrusted, "not_active"},
	} {
		o, why := releaseOutcome(tc.state, tc.reasons)
		if o != tc.want || why != tc.why {
			t.Errorf("releaseOutcome(%s, %v) = %s, %q; want %s, %q", tc.state, tc.reasons, o, why, tc.want, tc.why)
		}
	}
}
