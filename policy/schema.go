package policy

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/resolved"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
)

//go:embed schema.cedarschema
var schemaText []byte

// SchemaFile is the name the schema's positions are reported under.
const SchemaFile = "schema.cedarschema"

// Schema returns the Cedar schema every policy is validated against.
func Schema() []byte { return bytes.Clone(schemaText) }

// Entity types and action ids of the schema.
const (
	typeAgent  types.EntityType = "Agent"
	typeGroup  types.EntityType = "Group"
	typeTool   types.EntityType = "Tool"
	typeSkill  types.EntityType = "Skill"
	typeAction types.EntityType = "Action"

	typeTier       types.EntityType = "Tier"
	typeToolKind   types.EntityType = "ToolKind"
	typeEgress     types.EntityType = "Egress"
	typeTrust      types.EntityType = "Trust"
	typeCapability types.EntityType = "Capability"

	actionCall = "call"
)

// schemaInfo is the parsed schema and what is derived from it once.
type schemaInfo struct {
	resolved  *resolved.Schema
	validator *validate.Validator
	// actions are the action entities with their parents, served to Cedar
	// so that `action in Action::"call"` matches the capability actions.
	actions map[types.EntityUID]types.Entity
	// enums holds the values of each enum type, for the literal check that
	// cedar-go's validator does not make.
	enums map[types.EntityType]map[types.EntityUID]bool
	// enumValues holds each enum value as a Cedar Value, boxed once.
	enumValues map[types.EntityType]map[string]types.Value
}

var loadedSchema = sync.OnceValue(func() *schemaInfo {
	s, err := parseSchema(schemaText)
	if err != nil {
		// The schema is embedded and tested: this is a build defect.
		panic(err)
	}
	return s
})

func parseSchema(text []byte) (*schemaInfo, error) {
	var s schema.Schema
	s.SetFilename(SchemaFile)
	if err := s.UnmarshalCedar(text); err != nil {
		return nil, fmt.Errorf("policy schema: %w", err)
	}
	rs, err := s.Resolve()
	if err != nil {
		return nil, fmt.Errorf("policy schema: %w", err)
	}
	info := &schemaInfo{
		resolved:  rs,
		validator: validate.New(rs, validate.WithStrict()),
		actions:   make(map[types.EntityUID]types.Entity, len(rs.Actions)),
		enums:     make(map[types.EntityType]map[types.EntityUID]bool, len(rs.Enums)),

		enumValues: make(map[types.EntityType]map[string]types.Value, len(rs.Enums)),
	}
	for uid, a := range rs.Actions {
		info.actions[uid] = a.Entity
	}
	for t, e := range rs.Enums {
		vals := make(map[types.EntityUID]bool, len(e.Values))
		boxed := make(map[string]types.Value, len(e.Values))
		for _, v := range e.Values {
			vals[v] = true
			boxed[string(v.ID)] = v
		}
		info.enums[t] = vals
		info.enumValues[t] = boxed
	}
	// The Go side names every action and enum value the schema must have.
	need := map[types.EntityType][]string{
		typeTier:     {string(TierA), string(TierB), string(TierC)},
		typeToolKind: {string(KindProcess), string(KindSkill)},
		typeEgress:   {string(EgressNone), string(EgressPreflight), string(EgressStrict)},
		typeTrust:    {string(TrustActive), string(TrustQuarantined), string(TrustRevoked)},
	}
	for _, c := range Capabilities() {
		need[typeCapability] = append(need[typeCapability], string(c))
		if _, ok := info.actions[actionUID(string(c))]; !ok {
			return nil, fmt.Errorf("policy schema: no action %q", c)
		}
	}
	if _, ok := info.actions[actionUID(actionCall)]; !ok {
		return nil, fmt.Errorf("policy schema: no action %q", actionCall)
	}
	for t, vals := range need {
		if len(info.enums[t]) != len(vals) {
			return nil, fmt.Errorf("policy schema: enum %s has %d values, want %d", t, len(info.enums[t]), len(vals))
		}
		for _, v := range vals {
			if !info.enums[t][types.NewEntityUID(t, types.String(v))] {
				return nil, fmt.Errorf("policy schema: enum %s lacks %q", t, v)
			}
		}
	}
	return info, nil
}

func actionUID(name string) types.EntityUID {
	return types.NewEntityUID(typeAction, types.String(name))
}
