package policy

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/cedar-policy/cedar-go/types"
)

// entityCache keeps the agent and tool entities built for earlier calls, so
// that a call by a known agent to a known tool builds only its context.
// Entries are keyed by every field they were built from, in an injective
// encoding, so a hit is exactly the entity the fields would build again;
// only entities that passed their checks are kept. The cache holds at most
// maxCached entries and starts afresh when full. A nil cache builds every
// time.
type entityCache struct {
	m atomic.Pointer[sync.Map]
	n atomic.Int64
}

const maxCached = 4096

func newEntityCache() *entityCache {
	c := &entityCache{}
	c.m.Store(new(sync.Map))
	return c
}

func (c *entityCache) load(key []byte) (any, bool) {
	return c.m.Load().Load(string(key))
}

func (c *entityCache) store(key []byte, v any) {
	if c.n.Add(1) > maxCached {
		c.m.Store(new(sync.Map))
		c.n.Store(0)
	}
	c.m.Load().Store(string(key), v)
}

func (c *entityCache) agent(p *Principal) (types.Entity, error) {
	if c == nil {
		return buildAgent(p)
	}
	var stack [256]byte
	key := append(stack[:0], 'a')
	key = appendField(key, p.Name)
	key = binary.BigEndian.AppendUint32(key, p.UID)
	for _, g := range p.Groups {
		key = appendField(key, g)
	}
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
	key := append(stack[:0], 't')
	for _, f := range []string{t.Name, string(t.Kind), string(t.Tier), string(t.Egress)} {
		key = appendField(key, f)
	}
	key = appendCapabilities(key, t.Capabilities)
	if sk != nil {
		key = append(key, 's')
		for _, f := range []string{sk.Publisher, sk.Name, sk.Version, string(sk.Trust)} {
			key = appendField(key, f)
		}
		key = appendCapabilities(key, sk.Capabilities)
	}
	if v, ok := c.load(key); ok {
		return v.(resource), nil
	}
	r, err := buildResource(s, t, sk)
	if err == nil {
		c.store(key, r)
	}
	return r, err
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
