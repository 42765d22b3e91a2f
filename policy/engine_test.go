package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

var testNow = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// writePolicies makes a policy directory holding files.
func writePolicies(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustEngine(t testing.TB, dir string) *Engine {
	t.Helper()
	e, err := NewEngine(dir)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustPath(t testing.TB, p string) Path {
	t.Helper()
	r, err := ResolvePath(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustHost(t testing.TB, h string) Host {
	t.Helper()
	r, err := ParseHost(h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// localCall is a call the default set permits: the local user runs a
// native command in Tier C inside a workspace.
func localCall(t testing.TB, ws Path) *Request {
	return &Request{
		Principal: Principal{Name: "me", UID: 1000, Groups: []string{"local"}},
		Tool: Tool{
			Name: "process.run", Kind: KindProcess, Tier: TierC, Egress: EgressNone,
			Capabilities: []Capability{ProcessExec, FSWrite},
		},
		Actions: []Capability{ProcessExec},
		Context: Context{
			RunID: "run-1", Tier: TierC, Workspace: ws,
			Paths:   []Path{mustPath(t, ws.String()+"/out.txt")},
			Program: mustPath(t, "/"), Argv: []string{"ls", "-l"}, Now: testNow,
		},
	}
}

type decisionWant struct {
	allow    bool
	policies []string
}

func checkDecision(t *testing.T, d Decision, want decisionWant) {
	t.Helper()
	if d.Allowed() != want.allow || !slices.Equal(d.Policies(), want.policies) {
		t.Errorf("got %v, want allow=%v policies=%v\nreasons: %q", d, want.allow, want.policies, d.Reasons())
	}
}

func TestDefaultSet(t *testing.T) {
	t.Parallel()
	e := mustEngine(t, "")
	ws := mustPath(t, t.TempDir())
	outside := mustPath(t, t.TempDir())
	// A link inside the workspace that points out of it.
	if err := os.Symlink(outside.String(), filepath.Join(ws.String(), "escape")); err != nil {
		t.Fatal(err)
	}
	escape := mustPath(t, ws.String()+"/escape/secret")
	deny := func(ids ...string) decisionWant { return decisionWant{policies: ids} }
	tests := []struct {
		name   string
		mutate func(r *Request)
		want   decisionWant
	}{
		{"local command in its workspace", func(r *Request) {}, decisionWant{true, []string{"default.local-commands"}}},
		{"writes in its workspace", func(r *Request) { r.Actions = []Capability{ProcessExec, FSWrite} }, decisionWant{true, []string{"default.local-commands"}}},
		{"not in group local", func(r *Request) { r.Principal.Groups = []string{"agents"} }, deny()},
		{"no groups", func(r *Request) { r.Principal.Groups = nil }, deny()},
		{"interpreter", func(r *Request) {
			r.Tool.Capabilities = append(r.Tool.Capabilities, InterpreterRun)
			r.Actions = append(r.Actions, InterpreterRun)
		}, deny("default.no-interpreters")},
		{"network capability", func(r *Request) {
			r.Tool.Capabilities = append(r.Tool.Capabilities, NetworkEgress)
			r.Actions = append(r.Actions, NetworkEgress)
		}, deny("default.no-network")},
		{"egress host", func(r *Request) { r.Context.EgressHosts = []Host{mustHost(t, "example.com")} }, deny("default.no-network")},
		{"egress IP", func(r *Request) { r.Context.EgressHosts = []Host{mustHost(t, "10.0.0.1")} }, deny("default.no-network")},
		{"tool with egress", func(r *Request) { r.Tool.Egress = EgressStrict }, deny()},
		{"Tier B", func(r *Request) { r.Tool.Tier, r.Context.Tier = TierB, TierB }, deny()},
		{"no workspace", func(r *Request) { r.Context.Workspace, r.Context.Paths = Path{}, nil }, deny("default.workspace-only")},
		{"path outside", func(r *Request) { r.Context.Paths = append(r.Context.Paths, outside) }, deny("default.workspace-only")},
		{"path escaping through a link", func(r *Request) { r.Context.Paths = []Path{escape} }, deny("default.workspace-only")},
		{"secrets", func(r *Request) {
			r.Tool.Capabilities = append(r.Tool.Capabilities, SecretsRead)
			r.Actions = append(r.Actions, SecretsRead)
		}, deny()},
		{"capability the tool lacks", func(r *Request) { r.Tool.Capabilities = nil }, deny()},
		{"a skill", func(r *Request) {
			r.Tool = Tool{Name: "notes.search", Kind: KindSkill, Tier: TierA, Egress: EgressNone}
			r.Skill = &Skill{Publisher: "acme", Name: "notes", Version: "1.0.0", Trust: TrustActive}
			r.Actions, r.Context.Tier, r.Context.Program, r.Context.Argv = nil, TierA, Path{}, nil
		}, deny()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := localCall(t, ws)
			tt.mutate(r)
			checkDecision(t, e.Decide(r), tt.want)
		})
	}
}

// TestScenarios runs real Cedar evaluation over small policy sets written
// for each case.
func TestScenarios(t *testing.T) {
	t.Parallel()
	const gitTool = `
@id("git.permit")
permit (principal in Group::"dev", action in Action::"call", resource == Tool::"git");
`
	tests := []struct {
		name   string
		files  map[string]string
		mutate func(r *Request)
		want   decisionWant
	}{
		{
			name:  "a permit on the tool allows",
			files: map[string]string{"git.cedar": gitTool},
			mutate: func(r *Request) {
				r.Tool.Capabilities = append(r.Tool.Capabilities, NetworkEgress)
				r.Actions = append(r.Actions, NetworkEgress)
			},
			want: decisionWant{true, []string{"git.permit"}},
		},
		{
			name: "a forbid on a capability beats a permit on the tool",
			files: map[string]string{"git.cedar": gitTool, "net.cedar": `
@id("no-egress")
forbid (principal, action == Action::"network.egress", resource);
`},
			mutate: func(r *Request) {
				r.Tool.Capabilities = append(r.Tool.Capabilities, NetworkEgress)
				r.Actions = append(r.Actions, NetworkEgress)
			},
			want: decisionWant{false, []string{"no-egress"}},
		},
		{
			name: "the forbid on a capability leaves calls without it alone",
			files: map[string]string{"git.cedar": gitTool, "net.cedar": `
@id("no-egress")
forbid (principal, action == Action::"network.egress", resource);
`},
			mutate: func(r *Request) {},
			want:   decisionWant{true, []string{"git.permit"}},
		},
		{
			name: "a forbid on the group of actions covers every capability",
			files: map[string]string{"git.cedar": gitTool, "x.cedar": `
@id("no-secrets-via-call")
forbid (principal, action in Action::"call", resource)
when { context.capabilities.contains(Capability::"secrets.read") };
`},
			mutate: func(r *Request) {
				r.Tool.Capabilities = append(r.Tool.Capabilities, SecretsRead)
				r.Actions = append(r.Actions, SecretsRead)
			},
			want: decisionWant{false, []string{"no-secrets-via-call"}},
		},
		{
			name:   "a principal outside the group is denied",
			files:  map[string]string{"git.cedar": gitTool},
			mutate: func(r *Request) { r.Principal.Groups = []string{"ops"} },
			want:   decisionWant{false, nil},
		},
		{
			name:   "a principal named like the group gains nothing",
			files:  map[string]string{"git.cedar": gitTool},
			mutate: func(r *Request) { r.Principal.Name, r.Principal.Groups = "dev", nil },
			want:   decisionWant{false, nil},
		},
		{
			name:   "another tool is not permitted",
			files:  map[string]string{"git.cedar": gitTool},
			mutate: func(r *Request) { r.Tool.Name = "gitx" },
			want:   decisionWant{false, nil},
		},
		{
			name: "a capability permitted alone does not permit the call",
			files: map[string]string{"x.cedar": `
@id("exec-only")
permit (principal, action == Action::"process.exec", resource);
`},
			mutate: func(r *Request) {},
			want:   decisionWant{false, nil},
		},
	}
	// Context conditions decide as written.
	const hosts = `
@id("hosts")
permit (principal, action in Action::"call", resource)
when { ["proxy.golang.org", "sum.golang.org"].containsAll(context.egress_hosts) && context.egress_ips.isEmpty() };
`
	const tier = `
@id("tier-c")
permit (principal, action in Action::"call", resource) when { context.tier == Tier::"C" };
@id("tier-b-forbid")
forbid (principal, action in Action::"call", resource) when { context.tier == Tier::"B" };
`
	const calls = `
@id("calls")
permit (principal, action in Action::"call", resource) when { context.calls_used < 3 };
@id("calls-budget")
forbid (principal, action in Action::"call", resource)
when { context.budget has calls_max && context.calls_used >= context.budget.calls_max };
`
	ctxCases := []struct {
		name   string
		text   string
		mutate func(r *Request)
		want   decisionWant
	}{
		{"no hosts", hosts, func(r *Request) {}, decisionWant{true, []string{"hosts"}}},
		{"allowed hosts, written loosely", hosts, func(r *Request) {
			r.Context.EgressHosts = []Host{mustHost(t, "PROXY.golang.org."), mustHost(t, "sum.golang.org")}
		}, decisionWant{true, []string{"hosts"}}},
		{"one host too many", hosts, func(r *Request) {
			r.Context.EgressHosts = []Host{mustHost(t, "proxy.golang.org"), mustHost(t, "evil.example")}
		}, decisionWant{false, nil}},
		{"an IP literal", hosts, func(r *Request) {
			r.Context.EgressHosts = []Host{mustHost(t, "[::ffff:127.0.0.1]")}
		}, decisionWant{false, nil}},
		{"tier C", tier, func(r *Request) {}, decisionWant{true, []string{"tier-c"}}},
		{"tier B", tier, func(r *Request) { r.Tool.Tier, r.Context.Tier = TierB, TierB }, decisionWant{false, []string{"tier-b-forbid"}}},
		{"calls used 2", calls, func(r *Request) { r.Context.CallsUsed = 2 }, decisionWant{true, []string{"calls"}}},
		{"calls used 3", calls, func(r *Request) { r.Context.CallsUsed = 3 }, decisionWant{false, nil}},
		{"calls used reach the budget", calls, func(r *Request) {
			r.Context.CallsUsed, r.Context.Budget.CallsMax = 1, 1
		}, decisionWant{false, []string{"calls-budget"}}},
		{"no budget configured", calls, func(r *Request) { r.Context.CallsUsed = 1 }, decisionWant{true, []string{"calls"}}},
	}
	for _, c := range ctxCases {
		tests = append(tests, struct {
			name   string
			files  map[string]string
			mutate func(r *Request)
			want   decisionWant
		}{"context: " + c.name, map[string]string{"ctx.cedar": c.text}, c.mutate, c.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := mustEngine(t, writePolicies(t, tt.files))
			r := localCall(t, mustPath(t, t.TempDir()))
			r.Tool.Name = "git"
			r.Principal = Principal{Name: "coder", UID: 1001, Groups: []string{"dev"}}
			tt.mutate(r)
			checkDecision(t, e.Decide(r), tt.want)
		})
	}
}

// An erroring forbid must deny. Integer overflow passes strict validation
// and errors at evaluation time; cedar-go then skips the policy.
func TestEvaluationErrorDenies(t *testing.T) {
	t.Parallel()
	const permitAll = `
@id("permit-all")
permit (principal, action, resource);
`
	tests := []struct {
		name     string
		text     string
		policies []string
	}{
		{"erroring forbid", permitAll + `
@id("broken-forbid")
forbid (principal, action, resource)
when { context.calls_used * 4611686018427387904 > 0 };
`, []string{"broken-forbid"}},
		{"erroring forbid on one capability only", permitAll + `
@id("broken-exec")
forbid (principal, action == Action::"process.exec", resource)
when { context.calls_used * 4611686018427387904 > 0 };
`, []string{"broken-exec"}},
		{"erroring permit beside a good one", permitAll + `
@id("broken-permit")
permit (principal, action, resource)
when { context.calls_used * 4611686018427387904 > 0 };
`, []string{"broken-permit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writePolicies(t, map[string]string{"p.cedar": tt.text})
			e := mustEngine(t, dir)
			r := localCall(t, mustPath(t, t.TempDir()))
			r.Context.CallsUsed = 2
			// Plain cedar-go allows: this is what the engine must not do.
			set := e.set.Load()
			c, err := buildCall(loadedSchema(), nil, r)
			if err != nil {
				t.Fatal(err)
			}
			dec, diag := cedar.Authorize(set, &c.entities, cedar.Request{
				Principal: c.principal, Action: actionUID(string(ProcessExec)), Resource: c.resource, Context: c.context,
			})
			if dec != cedar.Allow || len(diag.Errors) == 0 {
				t.Fatalf("cedar-go now says %v with errors %v: revisit this test", dec, diag.Errors)
			}
			d := e.Decide(r)
			checkDecision(t, d, decisionWant{false, tt.policies})
			if !strings.Contains(strings.Join(d.Reasons(), "\n"), "failed to evaluate") {
				t.Errorf("reasons do not name the evaluation error: %q", d.Reasons())
			}
			// Without the overflow the same set allows.
			r.Context.CallsUsed = 0
			if d := e.Decide(r); !d.Allowed() {
				t.Errorf("calls_used 0: got %v", d)
			}
		})
	}
}

func TestReloadKeepsOldSet(t *testing.T) {
	t.Parallel()
	dir := writePolicies(t, map[string]string{"a.cedar": `
@id("first")
permit (principal, action in Action::"call", resource == Tool::"git");
`})
	e := mustEngine(t, dir)
	r := localCall(t, mustPath(t, t.TempDir()))
	r.Tool.Name = "git"
	checkDecision(t, e.Decide(r), decisionWant{true, []string{"first"}})

	bad := map[string]string{
		"parse":    "@id(\"second\")\npermit (principal, action, resource) when { 1 + };\n",
		"validate": "@id(\"second\")\npermit (principal, action, resource)\nwhen { resource.nope };\n",
		"enum":     "@id(\"second\")\npermit (principal, action, resource)\nwhen { context.tier == Tier::\"c\" };\n",
	}
	for name, text := range bad {
		if err := os.WriteFile(filepath.Join(dir, "a.cedar"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		err := e.Reload(dir)
		var le *LoadError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &le) || le.Problems[0].File != "a.cedar" || le.Problems[0].Line == 0 {
			t.Fatalf("%s: Reload = %v, want a LoadError at a.cedar:LINE", name, err)
		}
		checkDecision(t, e.Decide(r), decisionWant{true, []string{"first"}})
		if got := e.PolicyIDs(); !slices.Equal(got, []string{"first"}) {
			t.Fatalf("%s: policies in force %v", name, got)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "a.cedar"), []byte(`
@id("second")
forbid (principal, action, resource == Tool::"git");
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(dir); err != nil {
		t.Fatal(err)
	}
	checkDecision(t, e.Decide(r), decisionWant{false, []string{"second"}})
	if err := e.Reload(""); err != nil {
		t.Fatal(err)
	}
	if e.Source() != DefaultSource {
		t.Errorf("source %q after reloading the default", e.Source())
	}
}

// Decisions keep going while sets are swapped (run with -race).
func TestReloadConcurrent(t *testing.T) {
	t.Parallel()
	allow := writePolicies(t, map[string]string{"a.cedar": `@id("a") permit (principal, action, resource);`})
	deny := writePolicies(t, map[string]string{"a.cedar": `@id("d") forbid (principal, action, resource);`})
	e := mustEngine(t, allow)
	r := localCall(t, mustPath(t, t.TempDir()))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				d := e.Decide(r)
				if p := d.Policies(); len(p) != 1 || (d.Allowed() != (p[0] == "a")) {
					t.Errorf("inconsistent decision %v", d)
					return
				}
			}
		})
	}
	for i := range 50 {
		if err := e.Reload([]string{allow, deny}[i%2]); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}

func TestLoadProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string // Problem.String(), each a prefix
	}{
		{"parse error", map[string]string{"a.cedar": "permit (principal, action, resource)\n  when { context.calls_used > };\n"},
			[]string{`a.cedar:2:32: ";"`}},
		{"unterminated string", map[string]string{"a.cedar": "\n\npermit (principal, action, resource) when { \"x };\n"},
			[]string{`a.cedar:3:`}},
		{"unknown attribute", map[string]string{"a.cedar": "// c\n@id(\"x\")\nforbid (principal, action, resource)\nwhen { resource.skil.trust == Trust::\"active\" };\n"},
			[]string{`a.cedar:2:1: policy "x": attribute`}},
		{"optional attribute without has", map[string]string{"a.cedar": "forbid (principal, action, resource) when { resource.skill.trust == Trust::\"active\" };"},
			[]string{`a.cedar:1:1: policy "a.cedar:1:1": unable to guarantee safety`}},
		{"misspelt enum value", map[string]string{"a.cedar": "permit (principal, action, resource) when { context.tier == Tier::\"c\" };"},
			[]string{`a.cedar:1:1: policy "a.cedar:1:1": Tier::"c" is not a value of enum Tier`}},
		{"misspelt enum value in a set", map[string]string{"a.cedar": "permit (principal, action, resource) when { [Capability::\"fs.read\"].containsAll(context.capabilities) };"},
			[]string{`a.cedar:1:1: policy "a.cedar:1:1": Capability::"fs.read" is not a value`}},
		{"string where an enum is", map[string]string{"a.cedar": "permit (principal, action, resource) when { context.tier == \"C\" };"},
			[]string{`a.cedar:1:1: policy "a.cedar:1:1": the types String and Tier are not compatible`}},
		{"unknown action", map[string]string{"a.cedar": "permit (principal, action == Action::\"exec\", resource);"},
			[]string{`a.cedar:1:1: policy "a.cedar:1:1": unrecognized action`, `unable to find an applicable action`}},
		{"unknown entity type", map[string]string{"a.cedar": "permit (principal in Team::\"x\", action, resource);"},
			[]string{`a.cedar:1:1: policy "a.cedar:1:1": unrecognized entity type`, `unable to find an applicable action`}},
		{"duplicate id across files", map[string]string{
			"a.cedar": "@id(\"p\") permit (principal, action, resource);",
			"b.cedar": "\n@id(\"p\") permit (principal, action, resource);",
		}, []string{`b.cedar:2:1: policy id "p" is also used at a.cedar:1:1`}},
		{"bad id", map[string]string{"a.cedar": "@id(\"no spaces\") permit (principal, action, resource);"},
			[]string{`a.cedar:1:1: @id "no spaces"`}},
		{"bad file name", map[string]string{"a b.cedar": "permit (principal, action, resource);"},
			[]string{`a b.cedar: file names`}},
		{"no policy files", map[string]string{"README": "x"}, []string{"no *.cedar files"}},
		{"every problem is reported", map[string]string{
			"a.cedar": "permit (principal, action, resource) when { 1 + };",
			"b.cedar": "permit (principal, action, resource) when { context.nope };",
		}, []string{"a.cedar:1:", "b.cedar:1:1: policy \"b.cedar:1:1\": attribute `nope` in context not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writePolicies(t, tt.files)
			_, err := NewEngine(dir)
			var le *LoadError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("NewEngine = %v, want a LoadError", err)
			}
			got := make([]string, len(le.Problems))
			for i, p := range le.Problems {
				got[i] = p.String()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %q, want it to contain %q", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLoadRefusesWritableByEveryone(t *testing.T) {
	t.Parallel()
	dir := writePolicies(t, map[string]string{"a.cedar": `permit (principal, action, resource);`})
	if err := os.Chmod(filepath.Join(dir, "a.cedar"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := NewEngine(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "writable by everyone") {
		t.Errorf("world-writable file: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, "a.cedar"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := NewEngine(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "writable by everyone") {
		t.Errorf("world-writable directory: %v", err)
	}
	if _, err := NewEngine(filepath.Join(dir, "missing")); !errors.Is(err, ErrInvalid) {
		t.Errorf("missing directory: %v", err)
	}
}

func TestGeneratedIDsAndOrder(t *testing.T) {
	t.Parallel()
	dir := writePolicies(t, map[string]string{
		"b.cedar": "// no id\npermit (principal, action in Action::\"call\", resource);\n\n  permit (principal, action, resource);\n",
		"a.cedar": "@id(\"zeta\") permit (principal, action, resource);\n@id(\"alpha\")\npermit (principal, action, resource);\n",
	})
	e := mustEngine(t, dir)
	want := []string{"alpha", "b.cedar:2:1", "b.cedar:4:3", "zeta"}
	if got := e.PolicyIDs(); !slices.Equal(got, want) {
		t.Errorf("ids %q, want %q", got, want)
	}
	r := localCall(t, mustPath(t, t.TempDir()))
	checkDecision(t, e.Decide(r), decisionWant{true, want})
}

// Requests that do not hold together are denied even by a permit-all set.
func TestMalformedRequestsDenied(t *testing.T) {
	t.Parallel()
	e := mustEngine(t, writePolicies(t, map[string]string{"a.cedar": `@id("all") permit (principal, action, resource);`}))
	ws := mustPath(t, t.TempDir())
	if d := e.Decide(localCall(t, ws)); !d.Allowed() {
		t.Fatalf("the well-formed call is denied: %v %q", d, d.Reasons())
	}
	skill := func(r *Request) {
		r.Tool = Tool{Name: "s.t", Kind: KindSkill, Tier: TierA, Egress: EgressNone}
		r.Skill = &Skill{Publisher: "acme", Name: "s", Version: "1", Trust: TrustActive}
		r.Context.Tier, r.Context.Program, r.Context.Argv, r.Actions = TierA, Path{}, nil, nil
	}
	tests := []struct {
		name   string
		mutate func(r *Request)
	}{
		{"empty principal", func(r *Request) { r.Principal.Name = "" }},
		{"control character in principal", func(r *Request) { r.Principal.Name = "me\n" }},
		{"invalid UTF-8 group", func(r *Request) { r.Principal.Groups = []string{"\xff"} }},
		{"empty group", func(r *Request) { r.Principal.Groups = []string{""} }},
		{"empty tool", func(r *Request) { r.Tool.Name = "" }},
		{"unknown kind", func(r *Request) { r.Tool.Kind = "script" }},
		{"unknown tier", func(r *Request) { r.Tool.Tier, r.Context.Tier = "D", "D" }},
		{"lower-case tier", func(r *Request) { r.Context.Tier = "c" }},
		{"unknown egress", func(r *Request) { r.Tool.Egress = "" }},
		{"unknown capability asked", func(r *Request) { r.Actions = []Capability{"root"} }},
		{"call asked as a capability", func(r *Request) { r.Actions = []Capability{"call"} }},
		{"capability asked twice", func(r *Request) { r.Actions = []Capability{ProcessExec, ProcessExec} }},
		{"unknown tool capability", func(r *Request) { r.Tool.Capabilities = []Capability{"everything"} }},
		{"skill tool without skill", func(r *Request) { skill(r); r.Skill = nil }},
		{"process tool with skill", func(r *Request) { r.Skill = &Skill{Publisher: "a", Name: "b", Trust: TrustActive} }},
		{"skill with a slash", func(r *Request) { skill(r); r.Skill.Publisher = "acme/x" }},
		{"skill with unknown trust", func(r *Request) { skill(r); r.Skill.Trust = "trusted" }},
		{"skill outside Tier A", func(r *Request) { skill(r); r.Context.Tier = TierC }},
		{"skill with an argv", func(r *Request) { skill(r); r.Context.Argv = []string{"x"} }},
		{"process in Tier A", func(r *Request) { r.Tool.Tier, r.Context.Tier = TierA, TierA }},
		{"Tier C tool run in Tier B", func(r *Request) { r.Context.Tier = TierB }},
		{"zero host", func(r *Request) { r.Context.EgressHosts = []Host{{}} }},
		{"zero path", func(r *Request) { r.Context.Paths = []Path{{}} }},
		{"NUL in argv", func(r *Request) { r.Context.Argv = []string{"ls\x00-la"} }},
		{"negative calls", func(r *Request) { r.Context.CallsUsed = -1 }},
		{"negative budget", func(r *Request) { r.Context.Budget.CPUMillisUsed = -1 }},
		{"no time", func(r *Request) { r.Context.Now = time.Time{} }},
		{"run id with a newline", func(r *Request) { r.Context.RunID = "a\nb" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := localCall(t, ws)
			tt.mutate(r)
			d := e.Decide(r)
			if d.Allowed() || len(d.Policies()) != 0 {
				t.Fatalf("got %v", d)
			}
			if rs := d.Reasons(); len(rs) != 1 || !strings.Contains(rs[0], ErrRequest.Error()) {
				t.Errorf("reasons %q", rs)
			}
		})
	}
	if d := e.Decide(nil); d.Allowed() {
		t.Error("nil request allowed")
	}
}

func TestZeroValuesDeny(t *testing.T) {
	t.Parallel()
	var d Decision
	if d.Allowed() || d.String() != "deny" {
		t.Errorf("zero Decision: %v", d)
	}
	var e Engine
	r := localCall(t, mustPath(t, t.TempDir()))
	if d := e.Decide(r); d.Allowed() {
		t.Errorf("zero Engine: %v", d)
	}
	if e.PolicyIDs() != nil || e.Source() != "" {
		t.Error("zero Engine has policies")
	}
}

func TestSchemaActionsAndEnums(t *testing.T) {
	t.Parallel()
	s := loadedSchema()
	call := actionUID(actionCall)
	for _, c := range Capabilities() {
		a, ok := s.actions[actionUID(string(c))]
		if !ok || !a.Parents.Contains(call) || a.Parents.Len() != 1 {
			t.Errorf("action %s: %v %v, want a member of call only", c, ok, a.Parents)
		}
	}
	if len(s.actions) != 1+len(Capabilities()) {
		t.Errorf("%d actions in the schema", len(s.actions))
	}
	if _, err := parseSchema([]byte(strings.Replace(string(schemaText), `"fs.write",`, "", 1))); err == nil {
		t.Error("a schema without a capability the Go side knows was accepted")
	}
	if !strings.Contains(string(Schema()), "entity Agent") {
		t.Error("Schema() does not return the schema")
	}
	_ = types.EntityUID{}
}

func TestTables(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../testdata/policy/*.toml")
	if err != nil || len(files) < 2 {
		t.Fatalf("tables: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			table, err := LoadTable(f)
			if err != nil {
				t.Fatal(err)
			}
			e := mustEngine(t, table.Dir)
			for _, r := range table.Run(e, time.Now()) {
				if !r.Pass {
					t.Errorf("%s: %s (reasons %q)", r.Name, r.Problem, r.Decision.Reasons())
				}
			}
		})
	}
}

// A table that expects the wrong things must fail, case by case.
func TestTableMismatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.toml")
	text := `
now = 2026-03-02T10:00:00Z

[[case]]
name = "wrong decision"
expect = "allow"
principal = "x"
tool = "process.run"

[[case]]
name = "wrong policies"
expect = "deny"
policies = ["default.no-network"]
principal = "x"
tool = "process.run"

[[case]]
name = "bad host"
expect = "deny"
principal = "x"
tool = "process.run"
[case.context]
egress_hosts = ["bad host"]

[[case]]
name = "right"
expect = "deny"
policies = []
principal = "x"
tool = "process.run"
[case.context]
workspace = "/"
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	table, err := LoadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	res := table.Run(mustEngine(t, ""), time.Now())
	var pass []bool
	for _, r := range res {
		pass = append(pass, r.Pass)
	}
	if !slices.Equal(pass, []bool{false, false, false, true}) {
		t.Errorf("passes %v: %+v", pass, res)
	}
	for _, bad := range []string{
		"[[case]]\nname = \"x\"\nexpect = \"maybe\"\n",
		"[[case]]\nexpect = \"allow\"\nprincipl = \"x\"\n",
		"now = 1\n",
	} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadTable(path); err == nil {
			t.Errorf("table %q accepted", bad)
		}
	}
}
