package policy

import (
	"encoding/binary"
	"sync"

	"github.com/cedar-policy/cedar-go/types"
)

// entityCache keeps what earlier calls built of the parts of a call that do
// not change from one call to the next: the agent and tool entities, and the
// whole fixed part of a call (callStatic: who calls which tool asking for
// which capabilities), so that a call by a known agent to a known tool with
// a known list of capabilities builds only its context.
//
// Entries are keyed by every field they were built from, in an injective
// encoding, so a hit is exactly what the fields would build again; only
// what passed its checks is kept, and an entry is never changed once
// stored (Cedar values are immutable, and so is a callStatic). The cache
// holds at most maxCached entries and starts afresh when full. A nil cache
// builds every time.
type entityCache struct {
	mu sync.RWMutex
	m  map[string]any
}

const maxCached = 4096

func newEntityCache() *entityCache {
	return &entityCache{m: make(map[string]any)}
}

// load looks key up. The map lookup of string(key) does not copy key.
func (c *entityCache) load(key []byte) (any, bool) {
	c.mu.RLock()
	v, ok := c.m[string(key)]
	c.mu.RUnlock()
	return v, ok
}

func (c *entityCache) store(key []byte, v any) {
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = make(map[string]any)
	}
	c.m[string(key)] = v
	c.mu.Unlock()
}

// reset empties the cache. A new policy set calls for it: a callStatic
// keeps what the index of the set it was last used with chose, which would
// otherwise hold that set alive.
func (c *entityCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.m = make(map[string]any)
	c.mu.Unlock()
}

func (c *entityCache) agent(p *Principal) (types.Entity, error) {
	if c == nil {
		return buildAgent(p)
	}
	var stack [256]byte
	key := appendAgentKey(append(stack[:0], 'a'), p)
	if v, ok := c.load(key); ok {
		return v.(types.Entity), nil
	}
	e, err := buildAgent(p)
	if err == nil {
		c.store(key, e)
	}
	return e, err
}

func (c *entityCache) resource(s *schemaInfo, t *Tool, sk *Skill) (resource, error) {
	if c == nil {
		return buildResource(s, t, sk)
	}
	var stack [256]byte
	key := appendResourceKey(append(stack[:0], 't'), t, sk)
	if v, ok := c.load(key); ok {
		return v.(resource), nil
	}
	r, err := buildResource(s, t, sk)
	if err == nil {
		c.store(key, r)
	}
	return r, err
}

// static returns the callStatic of req, building it on a miss. A hit has
// passed every check of buildStatic but the one that also depends on the
// call's context (checkTiers), which is made again; a miss makes them all,
// in buildStatic's order, so that a request that fails several checks is
// refused with the same reason, cached or not.
func (c *entityCache) static(s *schemaInfo, req *Request) (*callStatic, error) {
	if c == nil {
		return buildStatic(s, nil, req)
	}
	var stack [512]byte
	key := append(stack[:0], 'c')
	key = appendAgentKey(key, &req.Principal)
	key = appendResourceKey(key, &req.Tool, req.Skill)
	key = appendCapabilities(key, req.Actions)
	if v, ok := c.load(key); ok {
		st := v.(*callStatic)
		// The tier checks depend on the call's own tier as well.
		if err := checkTiers(req); err != nil {
			return nil, err
		}
		return st, nil
	}
	st, err := buildStatic(s, c, req)
	if err == nil {
		c.store(key, st)
	}
	return st, err
}

func appendAgentKey(key []byte, p *Principal) []byte {
	key = appendField(key, p.Name)
	key = binary.BigEndian.AppendUint32(key, p.UID)
	key = binary.AppendUvarint(key, uint64(len(p.Groups)))
	for _, g := range p.Groups {
		key = appendField(key, g)
	}
	return key
}

func appendResourceKey(key []byte, t *Tool, sk *Skill) []byte {
	key = appendField(key, t.Name)
	key = appendField(key, string(t.Kind))
	key = appendField(key, string(t.Tier))
	key = appendField(key, string(t.Egress))
	key = appendCapabilities(key, t.Capabilities)
	if sk == nil {
		return append(key, 0)
	}
	key = append(key, 1)
	key = appendField(key, sk.Publisher)
	key = appendField(key, sk.Name)
	key = appendField(key, sk.Version)
	key = appendField(key, string(sk.Trust))
	return appendCapabilities(key, sk.Capabilities)
}

// appendField appends s with its length in front, so that no two lists of
// fields encode alike.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendCapabilities(b []byte, caps []Capability) []byte {
	b = binary.AppendUvarint(b, uint64(len(caps)))
	for _, c := range caps {
		b = appendField(b, string(c))
	}
	return b
}
