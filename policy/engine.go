package policy

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

// Engine decides tool calls against the policy set in force. It is safe for
// concurrent use; Reload swaps the set atomically, and a decision in flight
// finishes on the set it started with.
type Engine struct {
	set   atomic.Pointer[policySet]
	cache *entityCache
}

// NewEngine loads the policies of dir (every *.cedar file directly in it),
// or the embedded default set when dir is "".
func NewEngine(dir string) (*Engine, error) {
	s, err := load(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{cache: newEntityCache()}
	e.set.Store(s)
	return e, nil
}

// Reload loads dir ("" for the embedded default) and puts it in force. When
// the new set fails to load, the set in force stays and the error (a
// *LoadError, matching ErrInvalid) says why.
func (e *Engine) Reload(dir string) error {
	s, err := load(dir)
	if err != nil {
		return err
	}
	e.set.Store(s)
	e.cache.reset()
	return nil
}

// Source names where the policies in force came from: a directory, or
// DefaultSource.
func (e *Engine) Source() string {
	if s := e.set.Load(); s != nil {
		return s.source
	}
	return ""
}

// PolicyIDs lists the ids of the policies in force, sorted.
func (e *Engine) PolicyIDs() []string {
	s := e.set.Load()
	if s == nil {
		return nil
	}
	ids := make([]string, len(s.policies))
	for i, c := range s.policies {
		ids[i] = string(c.id)
	}
	return ids
}

// Decision is the outcome of Decide. Only this package makes one; the zero
// Decision denies.
type Decision struct {
	allow    bool
	policies []string
	reasons  []string
}

// Allowed reports whether the call may go ahead.
func (d Decision) Allowed() bool { return d.allow }

// Policies are the ids of the policies that decided, sorted: on allow, the
// permits that matched; on deny, the forbids that matched and the policies
// that failed to evaluate. A deny with no policy ids is the default deny (no
// permit matched) or a malformed request. These ids may go to the agent.
func (d Decision) Policies() []string { return slices.Clone(d.policies) }

// Reasons explain the decision for the local log: the action no policy
// permitted, evaluation errors, the @reason of deciding policies, or why
// the request was malformed. They may name request values and policy
// positions, and must not go to the agent.
func (d Decision) Reasons() []string { return slices.Clone(d.reasons) }

// String is "allow" or "deny", with the deciding policies in brackets.
func (d Decision) String() string {
	word := "deny"
	if d.allow {
		word = "allow"
	}
	if len(d.policies) == 0 {
		return word
	}
	return word + " [" + strings.Join(d.policies, " ") + "]"
}

// LogValue logs a decision under fixed keys.
func (d Decision) LogValue() slog.Value {
	word := "deny"
	if d.allow {
		word = "allow"
	}
	return slog.GroupValue(
		slog.String("decision", word),
		slog.Any("policies", d.policies),
		slog.Any("reasons", d.reasons),
	)
}

var _ slog.LogValuer = Decision{}

func denyMalformed(err error) Decision {
	return Decision{reasons: []string{err.Error()}}
}

// Decide authorizes req. The call is allowed only when "call" and every
// capability action asked are each allowed by Cedar with no evaluation error
// at all. A request that does not hold together is denied before Cedar sees
// it. Decide does not panic: a panic inside evaluation denies.
func (e *Engine) Decide(req *Request) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = Decision{reasons: []string{fmt.Sprintf("policy evaluation panicked: %v", r)}}
		}
	}()
	set := e.set.Load()
	if set == nil {
		return Decision{reasons: []string{"no policy set loaded"}}
	}
	var c call
	if err := c.build(loadedSchema(), e.cache, req); err != nil {
		return denyMalformed(err)
	}
	return set.decide(&c)
}

// decide evaluates every action of c through the index.
func (s *policySet) decide(c *call) Decision {
	var (
		permits []string
		denies  []string
		reasons []string
		denied  bool
	)
	policies := c.choose(s)
	for i, action := range c.actions {
		dec, diag := policies.lists[i].authorize(&c.entities, cedar.Request{
			Principal: c.principal, Action: action, Resource: c.resource, Context: c.context,
		})
		name := string(action.ID)
		for _, e := range diag.Errors {
			// cedar-go skipped this policy; had it been a forbid, Cedar's
			// answer would be wrong. Fail closed.
			denied = true
			denies = append(denies, string(e.PolicyID))
			reasons = append(reasons, "action "+name+": policy "+string(e.PolicyID)+" ("+position(e.Position)+") failed to evaluate: "+e.Message)
		}
		switch {
		case dec == cedar.Allow:
			if permits == nil {
				permits = make([]string, 0, 2*len(diag.Reasons))
			}
			for _, rs := range diag.Reasons {
				permits = append(permits, string(rs.PolicyID))
			}
		case len(diag.Reasons) == 0:
			denied = true
			reasons = append(reasons, "action "+name+": no policy permits it")
		default:
			denied = true
			for _, rs := range diag.Reasons {
				denies = append(denies, string(rs.PolicyID))
				reasons = append(reasons, s.because(name, rs.PolicyID, "forbids it"))
			}
		}
	}
	if denied {
		return Decision{policies: sortedUnique(denies), reasons: reasons}
	}
	ids := sortedUnique(permits)
	for _, id := range ids {
		if c := s.byID[types.PolicyID(id)]; c != nil && c.reason != "" {
			reasons = append(reasons, "policy "+id+": "+c.reason)
		}
	}
	return Decision{allow: true, policies: ids, reasons: reasons}
}

func (s *policySet) because(action string, id types.PolicyID, what string) string {
	msg := "action " + action + ": policy " + string(id) + " " + what
	if c := s.byID[id]; c != nil && c.reason != "" {
		msg += ": " + c.reason
	}
	return msg
}

func position(p cedar.Position) string {
	return p.Filename + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
