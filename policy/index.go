package policy

import (
	"iter"
	"slices"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// cedar-go evaluates every policy of a set on every request. The index
// narrows a request to the policies whose scope (the principal, action and
// resource constraints in the policy's head) can match it; the others would
// evaluate to false without error, so leaving them out changes nothing:
//
//   - cedar-go compiles a policy to `scope && conditions` and && stops at a
//     false left side, so a policy whose scope does not match yields false
//     and no error whatever its conditions hold;
//   - a scope never errors: it compares entity ids, types and ancestors;
//   - the ancestors the index uses are found through the same EntityGetter
//     Cedar uses, with the same closure (every parent of every reachable
//     entity), so `in` means the same thing to both.
//
// Each policy sits in exactly one bucket, keyed by its most selective scope
// constraint: an entity the resource must be (or be in), else one for the
// principal, else the action(s), else the resource's or the principal's
// type, else the catch-all list. A request looks up its resource, principal
// and action together with their ancestors, their types, and the catch-all
// list, then checks each candidate's whole scope. FuzzIndexMatchesFull
// compares indexed and full evaluation on random sets and hierarchies.

type scopeKind uint8

const (
	scopeAll scopeKind = iota
	scopeEq
	scopeIn
	scopeIs
	scopeIsIn
	scopeInSet
)

// scopeTerm is one of the three constraints of a policy's scope.
type scopeTerm struct {
	kind scopeKind
	typ  types.EntityType
	uid  types.EntityUID
	uids []types.EntityUID
}

type policyScope struct {
	principal, action, resource scopeTerm
}

func scopeOf(p *xast.Policy) policyScope {
	return policyScope{principal: termOf(p.Principal), action: termOf(p.Action), resource: termOf(p.Resource)}
}

func termOf(n xast.IsScopeNode) scopeTerm {
	switch n := n.(type) {
	case xast.ScopeTypeEq:
		return scopeTerm{kind: scopeEq, uid: n.Entity}
	case xast.ScopeTypeIn:
		return scopeTerm{kind: scopeIn, uid: n.Entity}
	case xast.ScopeTypeIs:
		return scopeTerm{kind: scopeIs, typ: n.Type}
	case xast.ScopeTypeIsIn:
		return scopeTerm{kind: scopeIsIn, typ: n.Type, uid: n.Entity}
	case xast.ScopeTypeInSet:
		return scopeTerm{kind: scopeInSet, uids: slices.Clone(n.Entities)}
	}
	// ScopeTypeAll, and any form a later cedar-go adds: match everything,
	// which is always safe for an index (the policy is just evaluated).
	return scopeTerm{kind: scopeAll}
}

// matches reports whether the request entity e, whose ancestors are anc,
// satisfies the term, exactly as Cedar's scope would.
func (t *scopeTerm) matches(e types.EntityUID, anc []types.EntityUID) bool {
	switch t.kind {
	case scopeEq:
		return e == t.uid
	case scopeIn:
		return e == t.uid || slices.Contains(anc, t.uid)
	case scopeIs:
		return e.Type == t.typ
	case scopeIsIn:
		return e.Type == t.typ && (e == t.uid || slices.Contains(anc, t.uid))
	case scopeInSet:
		for _, u := range t.uids {
			if e == u || slices.Contains(anc, u) {
				return true
			}
		}
		return false
	}
	return true
}

// entityKey reports the entity a term pins its variable to (or under).
func (t *scopeTerm) entityKey() (types.EntityUID, bool) {
	switch t.kind {
	case scopeEq, scopeIn, scopeIsIn:
		return t.uid, true
	}
	return types.EntityUID{}, false
}

type index struct {
	policies      []*compiled
	byResource    map[types.EntityUID][]int32
	byPrincipal   map[types.EntityUID][]int32
	byAction      map[types.EntityUID][]int32
	byResourceTyp map[types.EntityType][]int32
	byPrincipTyp  map[types.EntityType][]int32
	rest          []int32
	// multi is set when a policy sits under several action keys, so a
	// request can reach it twice.
	multi bool
}

func newIndex(policies []*compiled) *index {
	ix := &index{
		policies:      policies,
		byResource:    map[types.EntityUID][]int32{},
		byPrincipal:   map[types.EntityUID][]int32{},
		byAction:      map[types.EntityUID][]int32{},
		byResourceTyp: map[types.EntityType][]int32{},
		byPrincipTyp:  map[types.EntityType][]int32{},
	}
	for i, c := range policies {
		n := int32(i)
		s := &c.scope
		if k, ok := s.resource.entityKey(); ok {
			ix.byResource[k] = append(ix.byResource[k], n)
		} else if k, ok := s.principal.entityKey(); ok {
			ix.byPrincipal[k] = append(ix.byPrincipal[k], n)
		} else if k, ok := s.action.entityKey(); ok {
			ix.byAction[k] = append(ix.byAction[k], n)
		} else if s.action.kind == scopeInSet && len(s.action.uids) > 0 {
			for _, k := range uniqueUIDs(s.action.uids) {
				ix.byAction[k] = append(ix.byAction[k], n)
			}
			ix.multi = true
		} else if s.resource.kind == scopeIs {
			ix.byResourceTyp[s.resource.typ] = append(ix.byResourceTyp[s.resource.typ], n)
		} else if s.principal.kind == scopeIs {
			ix.byPrincipTyp[s.principal.typ] = append(ix.byPrincipTyp[s.principal.typ], n)
		} else {
			ix.rest = append(ix.rest, n)
		}
	}
	return ix
}

func uniqueUIDs(u []types.EntityUID) []types.EntityUID {
	out := make([]types.EntityUID, 0, len(u))
	for _, x := range u {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// target is one side of a request (principal, action or resource) with the
// ancestors the entity store gives it.
type target struct {
	uid types.EntityUID
	anc []types.EntityUID
}

// candidates appends to dst the policies whose scope matches the request,
// in the set's (id) order.
func (ix *index) candidates(dst candidateList, p, a, r *target) candidateList {
	var stack [32]int32
	idx := stack[:0]
	idx = lookup(idx, ix.byResource, r)
	idx = lookup(idx, ix.byPrincipal, p)
	idx = lookup(idx, ix.byAction, a)
	if len(ix.byResourceTyp) > 0 {
		idx = append(idx, ix.byResourceTyp[r.uid.Type]...)
	}
	if len(ix.byPrincipTyp) > 0 {
		idx = append(idx, ix.byPrincipTyp[p.uid.Type]...)
	}
	idx = append(idx, ix.rest...)
	slices.Sort(idx)
	if ix.multi {
		idx = slices.Compact(idx)
	}
	for _, n := range idx {
		c := ix.policies[n]
		s := &c.scope
		if s.resource.matches(r.uid, r.anc) && s.principal.matches(p.uid, p.anc) && s.action.matches(a.uid, a.anc) {
			dst = append(dst, c)
		}
	}
	return dst
}

func lookup(dst []int32, m map[types.EntityUID][]int32, t *target) []int32 {
	if len(m) == 0 {
		return dst
	}
	dst = append(dst, m[t.uid]...)
	for _, u := range t.anc {
		dst = append(dst, m[u]...)
	}
	return dst
}

// ancestors appends to dst every entity other than uid itself reachable
// from uid through parents in g: the closure Cedar's `in` walks. Each entity
// appears once, so no index key is looked up twice. Cycles end; missing
// entities end their branch.
func ancestors(g types.EntityGetter, uid types.EntityUID, dst []types.EntityUID) []types.EntityUID {
	start := len(dst)
	e, ok := g.Get(uid)
	if !ok {
		return dst
	}
	for p := range e.Parents.All() {
		if p != uid && !slices.Contains(dst[start:], p) {
			dst = append(dst, p)
		}
	}
	for i := start; i < len(dst); i++ {
		pe, ok := g.Get(dst[i])
		if !ok {
			continue
		}
		for p := range pe.Parents.All() {
			if p != uid && !slices.Contains(dst[start:], p) {
				dst = append(dst, p)
			}
		}
	}
	return dst
}

// authorize is cedar.Authorize over the policies whose scope matches req.
// p and r are req's principal and resource with their ancestors in g; cands
// is reused.
func (ix *index) authorize(g types.EntityGetter, req cedar.Request, p, r *target, cands candidateList) (cedar.Decision, cedar.Diagnostic, candidateList) {
	var stack [8]types.EntityUID
	a := target{uid: req.Action, anc: ancestors(g, req.Action, stack[:0])}
	l := newPolicyList(ix.candidates(cands[:0], p, &a, r))
	dec, diag := l.authorize(g, req)
	return dec, diag, l.list
}

// candidateList is the policies the index chose.
type candidateList []*compiled

// policyList is a cedar.PolicyIterator over the policies the index chose
// for one request. It is immutable, and its iterator is made once, so that
// one list serves every request it was chosen for.
type policyList struct {
	list candidateList
	all  iter.Seq2[types.PolicyID, *cedar.Policy]
}

var _ cedar.PolicyIterator = (*policyList)(nil)

func newPolicyList(list candidateList) *policyList {
	l := &policyList{list: list}
	l.all = func(yield func(types.PolicyID, *cedar.Policy) bool) {
		for _, c := range l.list {
			if !yield(c.id, c.policy) {
				return
			}
		}
	}
	return l
}

func (l *policyList) All() iter.Seq2[types.PolicyID, *cedar.Policy] { return l.all }

// authorize is cedar.Authorize over the policies of l.
func (l *policyList) authorize(g types.EntityGetter, req cedar.Request) (cedar.Decision, cedar.Diagnostic) {
	if len(l.list) == 0 {
		return cedar.Deny, cedar.Diagnostic{} // what Cedar says of no policies
	}
	return cedar.Authorize(l, g, req)
}

// choice is what the index of one policy set chose for each action of a
// call. A call's principal, resource and actions, with their ancestors, are
// fixed (callStatic), and so is a set's index, so the choice is made once
// per set, not once per call.
type choice struct {
	set   *policySet
	lists []*policyList // by action, as callStatic.actions
}

// choose returns the policies of s whose scope can match each action of c,
// choosing them on c's first call under s.
func (c *callStatic) choose(s *policySet) *choice {
	if ch := c.choice.Load(); ch != nil && ch.set == s {
		return ch
	}
	ch := &choice{set: s, lists: make([]*policyList, len(c.actions))}
	for i := range c.actions {
		ch.lists[i] = newPolicyList(s.index.candidates(nil, &c.principalTarget, &c.actionTargets[i], &c.resourceTarget))
	}
	c.choice.Store(ch)
	return ch
}
