package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cedar-policy/cedar-go/types"
)

// How a Request becomes Cedar (docs/POLICY.md has the same with examples):
//
//	principal  Agent::"<Principal.Name>"  parents Group::"<g>" for each group
//	           {uid: Long, groups: Set<String>}
//	actions    Action::"call", then Action::"<c>" for each capability asked
//	resource   Tool::"<Tool.Name>"  parent Skill::"<publisher>/<name>" for skills
//	           {kind, tier, capabilities, egress, skill?}
//	           Skill::"<publisher>/<name>" {publisher, name, version, trust, capabilities}
//	context    the Call record of the schema, the same for every action
//
// Entities are served per request by callEntities; the action entities
// (with their parents, so that action groups match) come from the schema.

// ErrRequest is wrapped by the reason of every request denied because it
// does not hold together.
var ErrRequest = errors.New("malformed policy request")

const (
	maxNameLen   = 256
	maxRunIDLen  = 256
	maxGroups    = 64
	maxListLen   = 256
	maxArgvBytes = 1 << 20
)

// call is a Request in Cedar's terms: its fixed part, shared by every call
// of the same agent to the same tool asking for the same capabilities, and
// its context.
type call struct {
	*callStatic
	context types.Record
}

// callStatic is what a call's principal, tool, skill and capabilities make
// of it; it does not depend on the call's context. It is immutable once
// built, so one value serves every call that maps to it, concurrently.
type callStatic struct {
	entities  callEntities
	principal types.EntityUID
	resource  types.EntityUID
	actions   []types.EntityUID // "call" first, then the capabilities asked
	// asked is context.capabilities: the Set of the capabilities of
	// actions[1:], boxed once.
	asked types.Value
	// The request's principal and resource, and each of actions, with their
	// ancestors in entities, for the index.
	principalTarget, resourceTarget target
	actionTargets                   []target
	// choice is what the index of the set last used chose for each
	// action, kept for the next call (choose).
	choice atomic.Pointer[choice]
}

// callEntities is the entity store of one call: the agent, the tool, the
// skill, and the schema's actions. Groups are not entities of their own:
// they have no attributes or parents, and Cedar's `in` needs only the
// agent's parents.
type callEntities struct {
	agent, tool, skill types.Entity
	hasSkill           bool
	actions            map[types.EntityUID]types.Entity
}

var _ types.EntityGetter = (*callEntities)(nil)

func (c *callEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	switch {
	case uid == c.agent.UID:
		return c.agent, true
	case uid == c.tool.UID:
		return c.tool, true
	case c.hasSkill && uid == c.skill.UID:
		return c.skill, true
	}
	e, ok := c.actions[uid]
	return e, ok
}

// buildCall checks req and maps it to Cedar. Any error means deny. cache,
// when not nil, keeps the fixed part of earlier calls.
func buildCall(s *schemaInfo, cache *entityCache, req *Request) (*call, error) {
	c := new(call)
	if err := c.build(s, cache, req); err != nil {
		return nil, err
	}
	return c, nil
}

// build is buildCall into c.
func (c *call) build(s *schemaInfo, cache *entityCache, req *Request) error {
	if req == nil {
		return fmt.Errorf("%w: no request", ErrRequest)
	}
	st, err := cache.static(s, req)
	if err != nil {
		return err
	}
	ctx, err := buildContext(s, &req.Context, st.asked)
	if err != nil {
		return err
	}
	c.callStatic, c.context = st, ctx
	return nil
}

// buildStatic checks and maps the fixed part of req, taking the agent and
// tool entities from cache when it has them.
func buildStatic(s *schemaInfo, cache *entityCache, req *Request) (*callStatic, error) {
	c := &callStatic{entities: callEntities{actions: s.actions}}
	agent, err := cache.agent(&req.Principal)
	if err != nil {
		return nil, err
	}
	res, err := cache.resource(s, &req.Tool, req.Skill)
	if err != nil {
		return nil, err
	}
	c.principal, c.resource = agent.UID, res.tool.UID
	c.entities.agent, c.entities.tool = agent, res.tool
	c.entities.skill, c.entities.hasSkill = res.skill, res.hasSkill

	if err := checkTiers(req); err != nil {
		return nil, err
	}

	// Actions: "call", then each capability once, in the order asked.
	if len(req.Actions) > len(Capabilities()) {
		// Capabilities are distinct, so more than all of them repeats one.
		return nil, fmt.Errorf("%w: %d actions", ErrRequest, len(req.Actions))
	}
	c.actions = make([]types.EntityUID, 1, 1+len(req.Actions))
	c.actions[0] = actionUID(actionCall)
	asked := make([]types.Value, 0, len(req.Actions))
	for _, a := range req.Actions {
		v, err := enumValue(typeCapability, string(a), s)
		if err != nil {
			return nil, err
		}
		uid := actionUID(string(a))
		if slices.Contains(c.actions, uid) {
			return nil, fmt.Errorf("%w: action %q asked twice", ErrRequest, a)
		}
		c.actions = append(c.actions, uid)
		asked = append(asked, v)
	}
	c.asked = types.NewSet(asked...)

	c.principalTarget = target{uid: c.principal, anc: ancestors(&c.entities, c.principal, nil)}
	c.resourceTarget = target{uid: c.resource, anc: ancestors(&c.entities, c.resource, nil)}
	c.actionTargets = make([]target, len(c.actions))
	for i, a := range c.actions {
		c.actionTargets[i] = target{uid: a, anc: ancestors(&c.entities, a, nil)}
	}
	return c, nil
}

// checkTiers holds a call's tool and tier together: skills run in Tier A
// and nothing else does, a Tier C tool runs in Tier C, and a skill has no
// program or argv.
func checkTiers(req *Request) error {
	t := &req.Tool
	skill := t.Kind == KindSkill
	if (t.Tier == TierA) != skill || (req.Context.Tier == TierA) != skill {
		return fmt.Errorf("%w: %s tool %q with tool tier %s and call tier %s", ErrRequest, t.Kind, t.Name, t.Tier, req.Context.Tier)
	}
	if t.Tier == TierC && req.Context.Tier != TierC {
		return fmt.Errorf("%w: tool %q is configured for tier C, the call would run in tier %s", ErrRequest, t.Name, req.Context.Tier)
	}
	if skill && (!req.Context.Program.IsZero() || len(req.Context.Argv) > 0) {
		return fmt.Errorf("%w: skill tool %q with a program or argv", ErrRequest, t.Name)
	}
	return nil
}

// buildAgent is Agent::"<name>" in its groups.
func buildAgent(p *Principal) (types.Entity, error) {
	if err := checkName("principal name", p.Name, maxNameLen); err != nil {
		return types.Entity{}, err
	}
	if len(p.Groups) > maxGroups {
		return types.Entity{}, fmt.Errorf("%w: more than %d groups", ErrRequest, maxGroups)
	}
	groupUIDs := make([]types.EntityUID, 0, len(p.Groups))
	groupNames := make([]types.Value, 0, len(p.Groups))
	for _, g := range p.Groups {
		if err := checkName("group name", g, maxNameLen); err != nil {
			return types.Entity{}, err
		}
		groupUIDs = append(groupUIDs, types.NewEntityUID(typeGroup, types.String(g)))
		groupNames = append(groupNames, types.String(g))
	}
	return types.Entity{
		UID:     types.NewEntityUID(typeAgent, types.String(p.Name)),
		Parents: types.NewEntityUIDSet(groupUIDs...),
		Attributes: types.NewRecord(types.RecordMap{
			"uid":    types.Long(p.UID),
			"groups": types.NewSet(groupNames...),
		}),
	}, nil
}

// resource is a call's Tool entity and, for a skill tool, its Skill.
type resource struct {
	tool, skill types.Entity
	hasSkill    bool
}

func buildResource(s *schemaInfo, t *Tool, sk *Skill) (resource, error) {
	var res resource
	if err := checkName("tool name", t.Name, maxNameLen); err != nil {
		return res, err
	}
	kind, err := enumValue(typeToolKind, string(t.Kind), s)
	if err != nil {
		return res, err
	}
	tier, err := enumValue(typeTier, string(t.Tier), s)
	if err != nil {
		return res, err
	}
	egress, err := enumValue(typeEgress, string(t.Egress), s)
	if err != nil {
		return res, err
	}
	toolCaps, err := capabilitySet(s, t.Capabilities)
	if err != nil {
		return res, err
	}
	toolAttrs := types.RecordMap{
		"kind":         kind,
		"tier":         tier,
		"capabilities": toolCaps,
		"egress":       egress,
	}
	var toolParents types.EntityUIDSet
	switch {
	case t.Kind == KindSkill && sk == nil:
		return res, fmt.Errorf("%w: skill tool %q without its skill", ErrRequest, t.Name)
	case t.Kind != KindSkill && sk != nil:
		return res, fmt.Errorf("%w: %s tool %q with a skill", ErrRequest, t.Kind, t.Name)
	case sk != nil:
		if err := checkName("skill publisher", sk.Publisher, maxNameLen); err != nil {
			return res, err
		}
		if err := checkName("skill name", sk.Name, maxNameLen); err != nil {
			return res, err
		}
		if strings.Contains(sk.Publisher, "/") || strings.Contains(sk.Name, "/") {
			return res, fmt.Errorf("%w: skill publisher and name may not contain '/'", ErrRequest)
		}
		if err := checkText("skill version", sk.Version, maxNameLen); err != nil {
			return res, err
		}
		trust, err := enumValue(typeTrust, string(sk.Trust), s)
		if err != nil {
			return res, err
		}
		skillCaps, err := capabilitySet(s, sk.Capabilities)
		if err != nil {
			return res, err
		}
		uid := types.NewEntityUID(typeSkill, types.String(sk.Publisher+"/"+sk.Name))
		res.skill = types.Entity{
			UID: uid,
			Attributes: types.NewRecord(types.RecordMap{
				"publisher":    types.String(sk.Publisher),
				"name":         types.String(sk.Name),
				"version":      types.String(sk.Version),
				"trust":        trust,
				"capabilities": skillCaps,
			}),
		}
		res.hasSkill = true
		toolAttrs["skill"] = uid
		toolParents = types.NewEntityUIDSet(uid)
	}
	res.tool = types.Entity{
		UID:        types.NewEntityUID(typeTool, types.String(t.Name)),
		Parents:    toolParents,
		Attributes: types.NewRecord(toolAttrs),
	}
	return res, nil
}

func buildContext(s *schemaInfo, x *Context, asked types.Value) (types.Record, error) {
	if err := checkText("run id", x.RunID, maxRunIDLen); err != nil {
		return types.Record{}, err
	}
	if x.CallsUsed < 0 {
		return types.Record{}, fmt.Errorf("%w: negative calls used", ErrRequest)
	}
	tier, err := enumValue(typeTier, string(x.Tier), s)
	if err != nil {
		return types.Record{}, err
	}
	if len(x.EgressHosts) > maxListLen || len(x.Paths) > maxListLen {
		return types.Record{}, fmt.Errorf("%w: more than %d hosts or paths", ErrRequest, maxListLen)
	}
	var names, ips []types.Value
	for _, h := range x.EgressHosts {
		switch {
		case h.IsZero():
			return types.Record{}, fmt.Errorf("%w: zero Host (use ParseHost)", ErrRequest)
		case h.IsIP():
			ips = append(ips, types.IPAddr(netip.PrefixFrom(h.ip, h.ip.BitLen())))
		default:
			names = append(names, types.String(h.name))
		}
	}
	paths := make([]types.Value, 0, len(x.Paths))
	inWorkspace := !x.Workspace.IsZero()
	for _, p := range x.Paths {
		if p.IsZero() {
			return types.Record{}, fmt.Errorf("%w: zero Path (use ResolvePath)", ErrRequest)
		}
		paths = append(paths, types.String(p.p))
		inWorkspace = inWorkspace && p.Within(x.Workspace)
	}
	size := 0
	for _, a := range x.Argv {
		size += len(a) + 1
		if strings.IndexByte(a, 0) >= 0 {
			return types.Record{}, fmt.Errorf("%w: an argument contains NUL", ErrRequest)
		}
	}
	if size > maxArgvBytes {
		return types.Record{}, fmt.Errorf("%w: argv over %d bytes", ErrRequest, maxArgvBytes)
	}
	if x.Now.IsZero() {
		return types.Record{}, fmt.Errorf("%w: the time is not set", ErrRequest)
	}
	budget, err := buildBudget(&x.Budget)
	if err != nil {
		return types.Record{}, err
	}
	h, mi, sec := x.Now.Clock()
	sinceMidnight := time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute +
		time.Duration(sec)*time.Second + time.Duration(x.Now.Nanosecond())
	m := contextMaps.Get().(types.RecordMap)
	m["run_id"] = types.String(x.RunID)
	m["calls_used"] = types.Long(x.CallsUsed)
	m["tier"] = tier
	m["capabilities"] = asked
	m["egress_hosts"] = newSet(names)
	m["egress_ips"] = newSet(ips)
	m["workspace"] = types.String(x.Workspace.p)
	m["paths"] = types.NewSet(paths...)
	m["paths_in_workspace"] = types.Boolean(inWorkspace)
	m["program"] = types.String(x.Program.p)
	m["argv_digest"] = types.String(ArgvDigest(x.Argv))
	m["now"] = types.NewDatetime(x.Now.UTC())
	m["time_of_day"] = types.NewDuration(sinceMidnight)
	m["budget"] = budget
	return newRecordFrom(&contextMaps, m), nil
}

// emptySet is the empty Set, boxed once.
var emptySet types.Value = types.NewSet()

// newSet is types.NewSet(v...), boxed.
func newSet(v []types.Value) types.Value {
	if len(v) == 0 {
		return emptySet
	}
	return types.NewSet(v...)
}

// contextMaps and budgetMaps are maps to build the context and budget
// records from. types.NewRecord copies the map it is given
// (TestNewRecordCopies holds it to that), so a map can be filled again for
// the next record instead of being allocated and grown afresh. Each is
// sized for its record: the copy takes the map's size, not its length.
var (
	contextMaps = sync.Pool{New: func() any { return make(types.RecordMap, contextFields) }}
	budgetMaps  = sync.Pool{New: func() any { return make(types.RecordMap, budgetFields) }}
)

// The number of fields of the Call and Budget records of the schema.
const (
	contextFields = 14
	budgetFields  = 8
)

// newRecordFrom is types.NewRecord(m), then gives m back to pool, emptied.
func newRecordFrom(pool *sync.Pool, m types.RecordMap) types.Record {
	r := types.NewRecord(m)
	clear(m)
	pool.Put(m)
	return r
}

func buildBudget(b *Budget) (types.Record, error) {
	m := budgetMaps.Get().(types.RecordMap)
	for _, f := range []struct {
		name  string
		v     int64
		limit bool
	}{
		{"calls_max", b.CallsMax, true},
		{"in_flight", b.InFlight, false},
		{"in_flight_max", b.InFlightMax, true},
		{"rate_tokens", b.RateTokens, false},
		{"cpu_ms_used", b.CPUMillisUsed, false},
		{"cpu_ms_max", b.CPUMillisMax, true},
		{"output_bytes_used", b.OutputBytesUsed, false},
		{"output_bytes_max", b.OutputBytesMax, true},
	} {
		if f.v < 0 {
			clear(m)
			budgetMaps.Put(m)
			return types.Record{}, fmt.Errorf("%w: negative budget figure %s", ErrRequest, f.name)
		}
		if f.limit && f.v == 0 {
			continue // no limit: the attribute is absent
		}
		m[types.String(f.name)] = types.Long(f.v)
	}
	return newRecordFrom(&budgetMaps, m), nil
}

func enumValue(t types.EntityType, v string, s *schemaInfo) (types.Value, error) {
	val, ok := s.enumValues[t][v]
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a %s", ErrRequest, v, t)
	}
	return val, nil
}

func capabilitySet(s *schemaInfo, caps []Capability) (types.Set, error) {
	if len(caps) > maxListLen {
		return types.Set{}, fmt.Errorf("%w: more than %d capabilities", ErrRequest, maxListLen)
	}
	vals := make([]types.Value, 0, len(caps))
	for _, c := range caps {
		v, err := enumValue(typeCapability, string(c), s)
		if err != nil {
			return types.Set{}, err
		}
		vals = append(vals, v)
	}
	return types.NewSet(vals...), nil
}

// checkName requires a non-empty printable UTF-8 string of at most max bytes.
func checkName(what, v string, max int) error {
	if v == "" {
		return fmt.Errorf("%w: empty %s", ErrRequest, what)
	}
	return checkText(what, v, max)
}

// checkText requires printable UTF-8 of at most max bytes (empty allowed).
func checkText(what, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%w: %s longer than %d bytes", ErrRequest, what, max)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not UTF-8", ErrRequest, what)
	}
	if strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%w: %s has unprintable characters", ErrRequest, what)
	}
	return nil
}
