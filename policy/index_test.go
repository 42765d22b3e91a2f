package policy

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// byteSource reads choices from fuzz input; past its end every choice is 0.
type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if n <= 1 || len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	return v % n
}

// The universe of the differential test: a few entities of each type, in
// arbitrary hierarchies (cycles and missing entities included), so that
// ancestors matter.
var (
	diffTypes    = []string{"Agent", "Group", "Tool", "Skill", "Action"}
	diffEntities = func() []types.EntityUID {
		var out []types.EntityUID
		for _, t := range diffTypes {
			for i := range 3 {
				out = append(out, types.NewEntityUID(types.EntityType(t), types.String(fmt.Sprint(i))))
			}
		}
		return out
	}()
)

func uidText(u types.EntityUID) string { return fmt.Sprintf("%s::%q", u.Type, string(u.ID)) }

func (s *byteSource) entity() types.EntityUID { return diffEntities[s.intn(len(diffEntities))] }

func (s *byteSource) scope(v string, action bool) string {
	switch s.intn(6) {
	case 1:
		return v + " == " + uidText(s.entity())
	case 2:
		return v + " in " + uidText(s.entity())
	case 3:
		if action {
			n := 1 + s.intn(3)
			var parts []string
			for range n {
				parts = append(parts, uidText(s.entity()))
			}
			return v + " in [" + strings.Join(parts, ", ") + "]"
		}
		return v + " is " + diffTypes[s.intn(len(diffTypes))]
	case 4:
		if action {
			return v + " == " + uidText(s.entity())
		}
		return v + " is " + diffTypes[s.intn(len(diffTypes))] + " in " + uidText(s.entity())
	}
	return v
}

var diffConditions = []string{
	"",
	"when { true }",
	"when { false }",
	"when { context.x > 1 }",
	"unless { context.x == 0 }",
	"when { context.nope }", // errors: no such attribute
	"when { context.x * 4611686018427387904 > 0 }", // errors when x ≥ 2
	"when { principal in Group::\"1\" }",
	"when { resource in principal }",
}

// genSet builds up to 24 random policies (text, then parsed: no schema) and
// the entity store and request to decide.
func genCase(s *byteSource) (string, types.EntityMap, cedar.Request) {
	var b strings.Builder
	n := s.intn(25)
	for i := range n {
		effect := "permit"
		if s.intn(3) == 0 {
			effect = "forbid"
		}
		if s.intn(2) == 0 {
			fmt.Fprintf(&b, "@id(\"p%d\")\n", i)
		}
		fmt.Fprintf(&b, "%s (%s, %s, %s) %s;\n", effect,
			s.scope("principal", false), s.scope("action", true), s.scope("resource", false),
			diffConditions[s.intn(len(diffConditions))])
	}
	em := types.EntityMap{}
	for _, u := range diffEntities {
		if s.intn(4) == 0 {
			continue // missing from the store
		}
		var parents []types.EntityUID
		for range s.intn(4) {
			parents = append(parents, s.entity())
		}
		em[u] = types.Entity{UID: u, Parents: types.NewEntityUIDSet(parents...)}
	}
	req := cedar.Request{
		Principal: s.entity(), Action: s.entity(), Resource: s.entity(),
		Context: types.NewRecord(types.RecordMap{"x": types.Long(s.intn(4))}),
	}
	return b.String(), em, req
}

// checkIndexMatchesFull decides one generated case with full and indexed
// evaluation and fails when they differ in decision, reasons or errors.
func checkIndexMatchesFull(t *testing.T, data []byte) {
	src := &byteSource{b: data}
	text, em, req := genCase(src)
	list, err := cedar.NewPolicyListFromBytes("gen.cedar", []byte(text))
	if err != nil {
		t.Fatalf("generated policies do not parse: %v\n%s", err, text)
	}
	var set policySet
	for i, p := range list {
		id := types.PolicyID(fmt.Sprintf("gen%02d", i))
		set.policies = append(set.policies, &compiled{id: id, policy: p, scope: scopeOf((*xast.Policy)(p.AST()))})
	}
	ix := newIndex(set.policies)
	fullDec, fullDiag := cedar.Authorize(&set, em, req)

	var stack [16]types.EntityUID
	p := target{uid: req.Principal, anc: ancestors(em, req.Principal, stack[:0])}
	r := target{uid: req.Resource, anc: ancestors(em, req.Resource, nil)}
	dec, diag, _ := ix.authorize(em, req, &p, &r, nil)

	if dec != fullDec || !slices.Equal(reasonIDs(diag), reasonIDs(fullDiag)) || !slices.Equal(errorIDs(diag), errorIDs(fullDiag)) {
		t.Fatalf("indexed %v %v errors %v; full %v %v errors %v\nrequest %v %v %v\nentities %v\npolicies:\n%s",
			dec, reasonIDs(diag), errorIDs(diag), fullDec, reasonIDs(fullDiag), errorIDs(fullDiag),
			req.Principal, req.Action, req.Resource, em, text)
	}
}

func reasonIDs(d cedar.Diagnostic) []string {
	var ids []string
	for _, r := range d.Reasons {
		ids = append(ids, string(r.PolicyID))
	}
	slices.Sort(ids)
	return ids
}

func errorIDs(d cedar.Diagnostic) []string {
	var ids []string
	for _, e := range d.Errors {
		ids = append(ids, string(e.PolicyID))
	}
	slices.Sort(ids)
	return ids
}

// TestIndexMatchesFull runs the differential check on many pseudo-random
// cases (FuzzIndexMatchesFull explores further).
func TestIndexMatchesFull(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 512)
	matched := 0
	for range 4000 {
		for i := 0; i < len(data); i += 8 {
			binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
		}
		checkIndexMatchesFull(t, data)
		if t.Failed() {
			return
		}
		matched++
	}
	if matched == 0 {
		t.Fatal("no case ran")
	}
}

// FuzzIndexMatchesFull: for random policy sets, entity hierarchies and
// requests, indexed evaluation gives exactly the decision, deciding
// policies and erroring policies of full evaluation.
func FuzzIndexMatchesFull(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(checkIndexMatchesFull)
}

// The index must actually narrow: at 1,000 policies keyed by tool and
// agent, a request sees only the few that can apply.
func TestIndexNarrows(t *testing.T) {
	t.Parallel()
	set := benchSet(t, 1000)
	c := benchCall(t, 1000)
	var stack [16]types.EntityUID
	p := target{uid: c.principal, anc: ancestors(&c.entities, c.principal, stack[:0])}
	r := target{uid: c.resource, anc: ancestors(&c.entities, c.resource, nil)}
	a := target{uid: c.actions[0], anc: ancestors(&c.entities, c.actions[0], nil)}
	cands := set.index.candidates(nil, &p, &a, &r)
	if len(cands) == 0 || len(cands) > 10 {
		var ids []types.PolicyID
		for _, c := range cands {
			ids = append(ids, c.id)
		}
		t.Fatalf("%d candidates of 1000: %v", len(cands), ids)
	}
	if d := set.decide(c); !d.Allowed() {
		t.Fatalf("benchmark call denied: %v %q", d, d.Reasons())
	}
}

// decideFull is Decide's rule over plain cedar.Authorize of the whole set:
// the call is allowed when every action is allowed with no evaluation
// error; the deciding policies are the permits of an allowed call, or the
// forbids and erroring policies of a denied one.
func decideFull(s *policySet, c *call) (allow bool, policies []string) {
	var permits, denies []string
	allow = true
	for _, a := range c.actions {
		d, diag := cedar.Authorize(s, &c.entities, cedar.Request{Principal: c.principal, Action: a, Resource: c.resource, Context: c.context})
		for _, e := range diag.Errors {
			allow = false
			denies = append(denies, string(e.PolicyID))
		}
		for _, r := range diag.Reasons {
			if d == cedar.Allow {
				permits = append(permits, string(r.PolicyID))
			} else {
				denies = append(denies, string(r.PolicyID))
			}
		}
		allow = allow && d == cedar.Allow
	}
	if allow {
		return true, sortedUnique(permits)
	}
	return false, sortedUnique(denies)
}

// Decide, with the fixed part of calls cached and the index's choice kept
// from one call to the next, decides as plain evaluation of the whole set
// does: for many calls, cold and warm, under several sets in turn on one
// engine, and for one call decided under sets that alternate.
func TestDecideMatchesFull(t *testing.T) {
	t.Parallel()
	erroring, err := compileFiles("erroring", []policyFile{{name: "e.cedar", data: []byte(`
@id("all") permit (principal, action, resource);
@id("broken") forbid (principal in Group::"g2", action == Action::"process.exec", resource)
when { context.calls_used * 4611686018427387904 > 0 };
`)}})
	if err != nil {
		t.Fatal(err)
	}
	example, err := load("../testdata/policy/example")
	if err != nil {
		t.Fatal(err)
	}
	sets := []*policySet{benchSet(t, 1000), benchSet(t, 100), defaultSet, example, permitAllSet, erroring}
	var reqs []*Request
	for i := range 60 {
		r := benchRequest(t)
		r.Principal = Principal{Name: fmt.Sprintf("agent%d", i%40), UID: uint32(2000 + i%40), Groups: []string{fmt.Sprintf("g%d", i%10)}}
		if i%7 == 0 {
			r.Principal.Groups = append(r.Principal.Groups, "local", "dev")
		}
		r.Tool.Name = fmt.Sprintf("tool%d", i%50)
		r.Tool.Capabilities = Capabilities()[:1+i%3]
		r.Actions = [][]Capability{nil, {ProcessExec}, {ProcessExec, FSWrite}, {InterpreterRun}, {NetworkEgress, ProcessExec}}[i%5]
		r.Context.CallsUsed = int64(i * 17 % 120)
		if i%11 == 0 {
			r.Context.Workspace = Path{}
		}
		reqs = append(reqs, r)
	}
	e := &Engine{cache: newEntityCache()}
	for _, s := range sets {
		e.set.Store(s) // as Reload does, but keeping the cache
		for round := range 2 {
			for i, r := range reqs {
				d := e.Decide(r)
				c, err := buildCall(loadedSchema(), nil, r)
				if err != nil {
					t.Fatal(err)
				}
				allow, ids := decideFull(s, c)
				if d.Allowed() != allow || !slices.Equal(d.Policies(), ids) {
					t.Fatalf("set %s, round %d, call %d: Decide says %v, full evaluation allow=%v %v", s.source, round, i, d, allow, ids)
				}
			}
		}
	}
	// One call, its choice kept, under sets that take turns.
	c, err := buildCall(loadedSchema(), nil, reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * len(sets) {
		s := sets[i%len(sets)]
		d := s.decide(c)
		if allow, ids := decideFull(s, c); d.Allowed() != allow || !slices.Equal(d.Policies(), ids) {
			t.Fatalf("set %s: decide says %v, full evaluation allow=%v %v", s.source, d, allow, ids)
		}
	}
}
