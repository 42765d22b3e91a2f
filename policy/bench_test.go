package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

// Benchmarks of authorization latency, indexed against plain
// cedar.Authorize over the same policies, entities and request, in the same
// run. Each reports p50 and p99 per decision besides ns/op:
//
//	go test -run '^$' -bench . ./policy/
//
// The sets are what an operator with many tools writes: a few guards that
// apply to every call, then per-tool permits for a group and per-agent
// forbids, so that of n policies only a handful can apply to one call.

const benchGuards = `
@id("guard.no-interpreters")
forbid (principal, action in Action::"call", resource)
when { context.capabilities.contains(Capability::"interpreter.run") };

@id("guard.budget")
forbid (principal, action in Action::"call", resource)
when { context.budget has calls_max && context.calls_used >= context.budget.calls_max };

@id("guard.ips")
forbid (principal, action in Action::"call", resource)
when { !context.egress_ips.isEmpty() };

@id("guard.exec")
permit (principal, action == Action::"process.exec", resource is Tool)
when { resource.kind == ToolKind::"process" && context.paths_in_workspace };
`

// benchPolicies returns n policies: the four guards, then per-tool permits
// and, every fifth, a per-agent forbid.
func benchPolicies(n int) string {
	var b strings.Builder
	b.WriteString(benchGuards)
	for i := 4; i < n; i++ {
		if i%5 == 0 {
			fmt.Fprintf(&b, "@id(\"agent%d.limit\")\nforbid (principal == Agent::\"agent%d\", action in Action::\"call\", resource)\nwhen { context.calls_used > 500 };\n", i, i%40)
			continue
		}
		fmt.Fprintf(&b, "@id(\"tool%d.permit\")\npermit (principal in Group::\"g%d\", action == Action::\"call\", resource == Tool::\"tool%d\")\nwhen { context.tier == Tier::\"C\" && context.calls_used < 1000 };\n", i, i%10, i)
	}
	return b.String()
}

func benchSet(tb testing.TB, n int) *policySet {
	tb.Helper()
	s, err := compileFiles("bench", []policyFile{{name: "bench.cedar", data: []byte(benchPolicies(n))}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(s.policies) != n {
		tb.Fatalf("%d policies, want %d", len(s.policies), n)
	}
	return s
}

// benchRequest is a call of agent7 (in g7) to tool7, which every set has a
// permit for.
func benchRequest(tb testing.TB) *Request {
	ws := Path{"/srv/ws/agent7"}
	return &Request{
		Principal: Principal{Name: "agent7", UID: 2007, Groups: []string{"g7"}},
		Tool: Tool{Name: "tool7", Kind: KindProcess, Tier: TierC, Egress: EgressNone,
			Capabilities: []Capability{ProcessExec}},
		Actions: []Capability{ProcessExec},
		Context: Context{
			RunID: "run-7", CallsUsed: 3, Tier: TierC, Workspace: ws,
			Paths: []Path{{"/srv/ws/agent7/main.go"}}, Program: Path{"/usr/bin/go"},
			Argv: []string{"go", "vet", "./..."}, Now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC),
			Budget: Budget{CallsMax: 100, RateTokens: 10},
		},
	}
}

// benchRequests are n calls of agent7 to tool7 that differ, as the broker's
// calls do, in what is true of each one: the time, the counters, the
// budget figures and the arguments. Nothing of a call's context can be
// reused from the call before.
func benchRequests(tb testing.TB, n int) []*Request {
	reqs := make([]*Request, n)
	for i := range reqs {
		r := benchRequest(tb)
		r.Context.CallsUsed = int64(i % 100)
		r.Context.Now = r.Context.Now.Add(time.Duration(i) * 1234567 * time.Microsecond)
		r.Context.Argv = []string{"go", "vet", fmt.Sprintf("./pkg%d/...", i)}
		r.Context.Budget.InFlight = int64(i % 4)
		r.Context.Budget.RateTokens = int64(i % 11)
		r.Context.Budget.CPUMillisUsed = int64(i * 37)
		r.Context.Budget.OutputBytesUsed = int64(i * 4099)
		reqs[i] = r
	}
	return reqs
}

func benchCall(tb testing.TB, _ int) *call {
	tb.Helper()
	c, err := buildCall(loadedSchema(), nil, benchRequest(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// benchEntities is a store of 100 entities (40 agents in 10 groups, 10
// groups, 50 tools) plus the schema's actions, holding the benchmark call's
// principal and resource.
func benchEntities(c *call) types.EntityMap {
	em := types.EntityMap{}
	for uid, a := range loadedSchema().actions {
		em[uid] = a
	}
	for i := range 10 {
		uid := types.NewEntityUID(typeGroup, types.String(fmt.Sprintf("g%d", i)))
		em[uid] = types.Entity{UID: uid}
	}
	for i := range 40 {
		g := fmt.Sprintf("g%d", i%10)
		uid := types.NewEntityUID(typeAgent, types.String(fmt.Sprintf("agent%d", i)))
		em[uid] = types.Entity{
			UID:     uid,
			Parents: types.NewEntityUIDSet(types.NewEntityUID(typeGroup, types.String(g))),
			Attributes: types.NewRecord(types.RecordMap{
				"uid": types.Long(2000 + i), "groups": types.NewSet(types.String(g)),
			}),
		}
	}
	for i := range 50 {
		uid := types.NewEntityUID(typeTool, types.String(fmt.Sprintf("tool%d", i)))
		e := c.entities.tool
		e.UID = uid
		em[uid] = e
	}
	em[c.principal] = c.entities.agent
	em[c.resource] = c.entities.tool
	return em
}

// latencies times each of b.N runs of f and reports p50 and p99.
func latencies(b *testing.B, f func()) {
	d := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		f()
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), "p99-ns")
}

func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		set := benchSet(b, n)
		c := benchCall(b, n)
		em := benchEntities(c)
		req := cedar.Request{Principal: c.principal, Action: c.actions[0], Resource: c.resource, Context: c.context}
		if d, _ := cedar.Authorize(set, em, req); d != cedar.Allow {
			b.Fatalf("%d policies: the benchmark call is denied", n)
		}
		b.Run(fmt.Sprintf("policies=%d/entities=%d/indexed", n, len(em)), func(b *testing.B) {
			var cands candidateList
			latencies(b, func() {
				// The principal's and resource's ancestors are found once
				// per call and shared by its actions; count them here.
				var stack [8]types.EntityUID
				p := target{uid: req.Principal, anc: ancestors(em, req.Principal, stack[:0])}
				r := target{uid: req.Resource, anc: ancestors(em, req.Resource, stack[len(p.anc):len(p.anc)])}
				var d cedar.Decision
				d, _, cands = set.index.authorize(em, req, &p, &r, cands)
				if d != cedar.Allow {
					b.Fatal("denied")
				}
			})
		})
		b.Run(fmt.Sprintf("policies=%d/entities=%d/plain", n, len(em)), func(b *testing.B) {
			latencies(b, func() {
				if d, _ := cedar.Authorize(set, em, req); d != cedar.Allow {
					b.Fatal("denied")
				}
			})
		})
	}
}

// BenchmarkDecide is a whole decision as the broker makes it: checking and
// mapping the Request (the fixed part of the call from the cache, the
// context built afresh), then "call" and "process.exec" through the index. "plain"
// does the same work with plain cedar.Authorize over the whole set. The
// calls cycle through benchRequests, so that each decision builds a context
// the one before did not.
func BenchmarkDecide(b *testing.B) {
	reqs := benchRequests(b, 256)
	for _, n := range []int{10, 100, 1000} {
		set := benchSet(b, n)
		e := &Engine{cache: newEntityCache()}
		e.set.Store(set)
		for _, req := range reqs {
			if d := e.Decide(req); !d.Allowed() {
				b.Fatalf("denied: %v %q", d, d.Reasons())
			}
		}
		b.Run(fmt.Sprintf("policies=%d/indexed", n), func(b *testing.B) {
			i := 0
			latencies(b, func() {
				req := reqs[i%len(reqs)]
				i++
				if !e.Decide(req).Allowed() {
					b.Fatal("denied")
				}
			})
		})
		b.Run(fmt.Sprintf("policies=%d/plain", n), func(b *testing.B) {
			i := 0
			latencies(b, func() {
				req := reqs[i%len(reqs)]
				i++
				c, err := buildCall(loadedSchema(), e.cache, req)
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range c.actions {
					d, diag := cedar.Authorize(set, &c.entities, cedar.Request{
						Principal: c.principal, Action: a, Resource: c.resource, Context: c.context,
					})
					if d != cedar.Allow || len(diag.Errors) > 0 {
						b.Fatal("denied")
					}
				}
			})
		})
	}
}

// BenchmarkLoad is parsing, validating and indexing a set.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{10, 1000} {
		files := []policyFile{{name: "bench.cedar", data: []byte(benchPolicies(n))}}
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			for range b.N {
				if _, err := compileFiles("bench", files); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
