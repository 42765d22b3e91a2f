package broker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stockade-dev/stockade/broker/hostcall"
	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/policy"
)

// SkillConfig enables one verified skill (Tier A) and says what the
// operator grants it: a call gets the intersection of this, the skill's
// approved manifest and what the policy permits. A skill not listed here
// cannot be called, whatever the verifier holds. Agents call its tools as
// "<id>/<tool>".
type SkillConfig struct {
	// ID is the skill's id, "publisher.name".
	ID string `toml:"id"`
	// Version pins a version; empty follows the active release.
	Version string `toml:"version"`
	// HTTP are the hosts it may reach, "host" or "host:port" (default ports
	// 80 and 443); HTTPPrivate lets these names (or IP literals) be
	// loopback or private addresses, as a test server or an intranet host
	// needs. Cloud metadata addresses are reachable only when named by IP.
	HTTP        []string `toml:"http"`
	HTTPPrivate bool     `toml:"http_private"`
	// Secrets are the values of the secrets it may read, by name. Their
	// values appear in no log and no attestation.
	Secrets map[string]string `toml:"secrets"`
	// Storage grants its key-value namespace.
	Storage bool `toml:"storage"`
	// Channels it may send messages on.
	Channels []string `toml:"channels"`
	// Limits: the most a call may have; a skill asking for less gets less.
	Fuel         uint64   `toml:"fuel"`           // default 10,000,000
	MemoryBytes  uint64   `toml:"memory_bytes"`   // default 64 MiB
	Timeout      Duration `toml:"timeout"`        // default 10s
	MaxHostCalls int      `toml:"max_host_calls"` // default 10,000
	MaxOutput    int64    `toml:"max_output"`     // default 1 MiB

	// grant is what the entry grants, parsed once at load (checkSkills).
	grant hostcall.Grant
}

// Tier A defaults and ceilings.
const (
	defaultSkillFuel      = 10_000_000
	defaultSkillMemory    = 64 << 20
	maxSkillMemory        = 64 << 20 // wazero's limit here, WithMemoryLimitPages(1024)
	defaultSkillTimeout   = 10 * time.Second
	defaultSkillHostCalls = 10_000
)

func (c *Config) checkSkills() error {
	seen := map[string]bool{}
	for i := range c.Skills {
		sk := &c.Skills[i]
		if sk.ID == "" || strings.ContainsAny(sk.ID, "/ ") || strings.Count(sk.ID, ".") < 1 {
			return fmt.Errorf("skill %d: id %q must be publisher.name", i+1, sk.ID)
		}
		if seen[sk.ID] {
			return fmt.Errorf("skill %q listed twice", sk.ID)
		}
		seen[sk.ID] = true
		sk.grant = hostcall.Grant{KV: sk.Storage, Channels: append([]string(nil), sk.Channels...)}
		for name := range sk.Secrets {
			sk.grant.Secrets = append(sk.grant.Secrets, name)
		}
		slices.Sort(sk.grant.Secrets)
		for _, h := range sk.HTTP {
			hg, err := hostcall.ParseHostGrant(h)
			if err != nil {
				return fmt.Errorf("skill %q: http %q: %v", sk.ID, h, err)
			}
			hg.AllowPrivate = sk.HTTPPrivate
			sk.grant.HTTP = append(sk.grant.HTTP, hg)
		}
		for _, ch := range sk.Channels {
			if ch == "" || len(ch) > 64 {
				return fmt.Errorf("skill %q: bad channel name %q", sk.ID, ch)
			}
		}
		if sk.Fuel == 0 {
			sk.Fuel = defaultSkillFuel
		}
		if sk.MemoryBytes == 0 {
			sk.MemoryBytes = defaultSkillMemory
		}
		if sk.MemoryBytes > maxSkillMemory || sk.MemoryBytes < 64<<10 {
			return fmt.Errorf("skill %q: memory_bytes must be between 64 KiB and %d", sk.ID, maxSkillMemory)
		}
		if sk.Timeout == 0 {
			sk.Timeout = Duration(defaultSkillTimeout)
		}
		if sk.Timeout < 0 || time.Duration(sk.Timeout) > 10*time.Minute {
			return fmt.Errorf("skill %q: timeout must be positive and at most 10m", sk.ID)
		}
		if sk.MaxHostCalls == 0 {
			sk.MaxHostCalls = defaultSkillHostCalls
		}
		if sk.MaxOutput == 0 {
			sk.MaxOutput = defaultMaxOutput
		}
		// The agent's reply carries the output, the channel messages and
		// the log lines (up to ipc.WasmOutcomeExtra) within output_frame_max.
		if sk.MaxHostCalls < 0 || sk.MaxOutput < 0 || sk.MaxOutput > int64(c.OutputFrameMax-frameOverhead-ipc.WasmOutcomeExtra) {
			return fmt.Errorf("skill %q: max_host_calls and max_output must be positive, and max_output at most output_frame_max - %d", sk.ID, frameOverhead+ipc.WasmOutcomeExtra)
		}
	}
	return nil
}

// skillTool splits "<id>/<tool>".
func skillTool(name string) (id, tool string, ok bool) {
	id, tool, ok = strings.Cut(name, "/")
	return id, tool, ok && id != "" && tool != "" && !strings.Contains(tool, "/")
}

// policySkill is the policy's view of a resolved skill.
func policySkill(id, version string, caps []policy.Capability) (*policy.Skill, error) {
	pub, name, ok := strings.Cut(id, ".")
	if !ok {
		return nil, fmt.Errorf("skill id %q", id)
	}
	return &policy.Skill{Publisher: pub, Name: name, Version: version, Trust: policy.TrustActive, Capabilities: caps}, nil
}
