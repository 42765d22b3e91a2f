// Package policy authorizes tool calls with Cedar (github.com/cedar-policy/cedar-go).
//
// The broker builds a Request for each call (who calls, which tool or
// skill, which capabilities the call exercises, and facts about the call)
// and asks an Engine to Decide. A Request becomes one Cedar request per
// action: Action::"call", and one action per capability asked
// (Action::"process.exec", Action::"network.egress", ...). The call is
// allowed only when every one of them is. docs/POLICY.md describes the
// entity model, the schema (schema.cedarschema, embedded) and the policy
// files, with examples.
//
// Policies are operator files (*.cedar) in a directory, or the embedded
// default set (default/). A set is parsed, given ids (@id, or
// "<file>:<line>:<column>"), validated against the schema in strict mode,
// checked for enum literals the schema does not declare, and indexed, all
// before it can be used; a set with one bad policy is refused whole, and
// Engine.Reload then keeps the set in force.
//
// # Security
//
// What this package trusts:
//
//   - The policy files: they are the operator's word. They are checked for
//     form (they must parse and validate against the schema, ids must be
//     unique) but not for sense. A directory or file writable by everyone
//     is refused; owners are not checked, so the directory must be writable
//     only by its administrators.
//   - The broker, for the facts of a Request: the principal resolved from
//     the peer's uid (never from the agent's message), the tool and skill
//     from its registry and the verifier, the counters from its budgets.
//     Agent-controlled text reaches Cedar only as values of a Request's
//     fields; it cannot choose the principal, add entities or policies.
//   - cedar-go, to evaluate correctly. Where it fails open, this package
//     closes: cedar-go skips a policy that errors while evaluating (a
//     broken forbid would allow), so any evaluation error denies. A panic
//     during a decision denies.
//
// What it checks before believing a Request: every enum value (tier, kind,
// egress, trust, capability) is one the schema declares; names are
// non-empty printable UTF-8 within length limits; a skill tool carries its
// skill and runs in Tier A, and nothing else does; hosts and paths are
// canonical values (Host, Path) that only ParseHost and ResolvePath make,
// so a policy never compares a raw path or host name; counters are not
// negative; the time is set. A Request that fails any check is denied,
// whatever the policies say. The zero Decision denies, and the zero Engine
// denies everything.
//
// Decisions carry policy ids, which may go to the agent, and reasons, which
// may name request values and must stay in the local log.
//
// The index that makes a decision cost the few policies that can apply
// rather than all of them is an optimisation with no say of its own: it
// only skips policies whose scope cannot match, and a differential fuzz
// test holds it to the decisions of full evaluation.
//
// The package imports no role: the broker calls it.
package policy
