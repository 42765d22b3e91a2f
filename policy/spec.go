package policy

import (
	"fmt"
	"time"
)

// CallSpec describes a Request in plain values, for administrators: it is a
// row of a test table (TOML) and what `stockade policy eval` builds from its
// flags and --context (JSON). Request turns it into a Request, making hosts
// and paths canonical on the way, exactly as the broker would.
type CallSpec struct {
	Principal string   `toml:"principal" json:"principal"`
	UID       uint32   `toml:"uid" json:"uid"`
	Groups    []string `toml:"groups" json:"groups"`

	Tool             string   `toml:"tool" json:"tool"`
	ToolKind         string   `toml:"tool_kind" json:"tool_kind"`     // default "skill" when Skill is set, else "process"
	ToolTier         string   `toml:"tool_tier" json:"tool_tier"`     // default: the context's tier
	ToolEgress       string   `toml:"tool_egress" json:"tool_egress"` // default "none"
	ToolCapabilities []string `toml:"tool_capabilities" json:"tool_capabilities"`

	Skill *SkillSpec `toml:"skill" json:"skill"`

	// Actions are the capabilities the call asks for, beyond "call".
	Actions []string `toml:"actions" json:"actions"`

	Context ContextSpec `toml:"context" json:"context"`
}

// SkillSpec describes the skill of a skill tool.
type SkillSpec struct {
	Publisher    string   `toml:"publisher" json:"publisher"`
	Name         string   `toml:"name" json:"name"`
	Version      string   `toml:"version" json:"version"`
	Trust        string   `toml:"trust" json:"trust"`
	Capabilities []string `toml:"capabilities" json:"capabilities"`
}

// ContextSpec describes a call's context. It is also the JSON object of
// `stockade policy eval --context`.
type ContextSpec struct {
	RunID     string `toml:"run_id" json:"run_id"`
	CallsUsed int64  `toml:"calls_used" json:"calls_used"`
	// Tier defaults to the tool's tier, and both to "A" for skills and "C"
	// otherwise.
	Tier string `toml:"tier" json:"tier"`
	// EgressHosts are host names or IP literals, made canonical by ParseHost.
	EgressHosts []string `toml:"egress_hosts" json:"egress_hosts"`
	// Workspace and Paths are resolved on this machine by ResolvePath;
	// relative Paths are taken from Workspace.
	Workspace string   `toml:"workspace" json:"workspace"`
	Paths     []string `toml:"paths" json:"paths"`
	Program   string   `toml:"program" json:"program"`
	Argv      []string `toml:"argv" json:"argv"`
	// Now is when the call is decided (RFC 3339 in JSON, a datetime in
	// TOML); zero means the current time.
	Now    time.Time  `toml:"now" json:"now"`
	Budget BudgetSpec `toml:"budget" json:"budget"`
}

// BudgetSpec holds the budget figures; a zero maximum means no limit.
type BudgetSpec struct {
	CallsMax        int64 `toml:"calls_max" json:"calls_max"`
	InFlight        int64 `toml:"in_flight" json:"in_flight"`
	InFlightMax     int64 `toml:"in_flight_max" json:"in_flight_max"`
	RateTokens      int64 `toml:"rate_tokens" json:"rate_tokens"`
	CPUMillisUsed   int64 `toml:"cpu_ms_used" json:"cpu_ms_used"`
	CPUMillisMax    int64 `toml:"cpu_ms_max" json:"cpu_ms_max"`
	OutputBytesUsed int64 `toml:"output_bytes_used" json:"output_bytes_used"`
	OutputBytesMax  int64 `toml:"output_bytes_max" json:"output_bytes_max"`
}

// Request builds the Request s describes. now is used when s sets no time.
// Values are not checked here beyond what canonicalisation needs: Decide
// denies a Request that does not hold together, as it would the broker's.
func (s *CallSpec) Request(now time.Time) (*Request, error) {
	kind := ToolKind(s.ToolKind)
	if kind == "" {
		kind = KindProcess
		if s.Skill != nil {
			kind = KindSkill
		}
	}
	defTier := TierC
	if kind == KindSkill {
		defTier = TierA
	}
	tier, toolTier := Tier(s.Context.Tier), Tier(s.ToolTier)
	switch {
	case tier == "" && toolTier == "":
		tier, toolTier = defTier, defTier
	case tier == "":
		tier = toolTier
	case toolTier == "":
		toolTier = tier
	}
	egress := Egress(s.ToolEgress)
	if egress == "" {
		egress = EgressNone
	}
	req := &Request{
		Principal: Principal{Name: s.Principal, UID: s.UID, Groups: s.Groups},
		Tool: Tool{
			Name: s.Tool, Kind: kind, Tier: toolTier, Egress: egress,
			Capabilities: toCapabilities(s.ToolCapabilities),
		},
		Actions: toCapabilities(s.Actions),
	}
	if s.Skill != nil {
		req.Skill = &Skill{
			Publisher: s.Skill.Publisher, Name: s.Skill.Name, Version: s.Skill.Version,
			Trust: Trust(s.Skill.Trust), Capabilities: toCapabilities(s.Skill.Capabilities),
		}
	}
	x := &s.Context
	ctx := Context{
		RunID: x.RunID, CallsUsed: x.CallsUsed, Tier: tier, Argv: x.Argv, Now: x.Now,
		Budget: Budget(x.Budget),
	}
	if ctx.Now.IsZero() {
		ctx.Now = now
	}
	for _, h := range x.EgressHosts {
		host, err := ParseHost(h)
		if err != nil {
			return nil, err
		}
		ctx.EgressHosts = append(ctx.EgressHosts, host)
	}
	var err error
	if x.Workspace != "" {
		if ctx.Workspace, err = ResolvePath(x.Workspace); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	for _, p := range x.Paths {
		rp, err := ResolvePathIn(ctx.Workspace, p)
		if err != nil {
			return nil, err
		}
		ctx.Paths = append(ctx.Paths, rp)
	}
	if x.Program != "" {
		if ctx.Program, err = ResolvePath(x.Program); err != nil {
			return nil, fmt.Errorf("program: %w", err)
		}
	}
	req.Context = ctx
	return req, nil
}

func toCapabilities(s []string) []Capability {
	if s == nil {
		return nil
	}
	out := make([]Capability, len(s))
	for i, c := range s {
		out[i] = Capability(c)
	}
	return out
}
