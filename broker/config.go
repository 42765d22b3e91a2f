package broker

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/stockade-dev/stockade/policy"
)

//go:embed default.toml
var defaultConfig []byte

// DefaultConfig is the embedded configuration `make run` starts with.
func DefaultConfig() []byte { return bytes.Clone(defaultConfig) }

// Hard ceilings that no configuration or request may pass.
const (
	maxTimeout       = 10 * time.Minute
	maxArgs          = 256
	maxArgLen        = 8 << 10
	maxToolNameLen   = 128
	maxRunIDLen      = 128
	maxWorkspaceLen  = 1024
	minOutputFrame   = 64 << 10
	frameOverhead    = 64 << 10
	ProcessRunTool   = "process.run"
	defaultMaxOutput = 1 << 20
)

// Config is the broker's configuration, decoded strictly from TOML: an
// unknown key is an error. Every field is optional.
type Config struct {
	// AgentUIDs may call the broker on agent.sock. Empty means the uid the
	// broker runs as (single-user mode). The peer's uid comes from the kernel.
	AgentUIDs []uint32 `toml:"agent_uids"`
	// MaxConnsPerUID caps the agent connections one uid may hold open
	// (default 16).
	MaxConnsPerUID int `toml:"max_conns_per_uid"`
	// OutputFrameMax caps the frames that carry output (default 4 MiB). A
	// call's max_output must leave 64 KiB of it for the rest of the outcome.
	OutputFrameMax int `toml:"output_frame_max"`
	// Agents name the principals: a uid, the name Cedar knows it by
	// (Agent::"name") and its groups. Their uids may call the broker too. In
	// single-user mode the invoking uid not listed here is Agent::"local" in
	// Group::"local".
	Agents []AgentConfig `toml:"agent"`
	// PolicyDir holds the operator's *.cedar files; empty means the embedded
	// default set. Reloaded on SIGHUP.
	PolicyDir string `toml:"policy_dir"`
	// Budget limits runs; charged only when a call is permitted.
	Budget BudgetConfig `toml:"budget"`
	// Defaults apply to every tool that does not set its own.
	Defaults Limits `toml:"defaults"`
	// WorkspaceRoots, when set, are the only trees a call's workspace may be
	// in (absolute paths). Whatever they say, a workspace may never be "/",
	// a system directory, or overlap Stockade's own state, runtime, policy or
	// binary directories.
	WorkspaceRoots []string `toml:"workspace_roots"`
	// Run configures the built-in process.run tool (ad-hoc commands).
	Run RunConfig `toml:"run"`
	// Tools are the configured tools. process.run is always present.
	Tools []ToolConfig `toml:"tool"`
	// Skills are the verified skills agents may call (Tier A), with what
	// the operator grants each.
	Skills []SkillConfig `toml:"skill"`

	// Read by the supervisor (multi-uid mode), accepted and ignored here:
	// who the roles run as. See docs/DEPLOYMENT.md.
	BrokerUser       string   `toml:"broker_user"`
	VerifierUser     string   `toml:"verifier_user"`
	ExecutorUIDRange []uint32 `toml:"executor_uid_range"`
	AgentGroups      []string `toml:"agent_groups"`
	AdminGroup       string   `toml:"admin_group"`
	AutoActivate     bool     `toml:"auto_activate"`
}

// Isolation is how a tool's calls are confined. It is shared by configured
// tools and by process.run.
type Isolation struct {
	// Tier is "C" (Landlock, seccomp, bubblewrap when usable; the default)
	// or "B" (rlimits, no_new_privs, seccomp, cleared environment).
	Tier string `toml:"tier"`
	// Egress is "none" (default), "preflight" (hosts named in arguments must
	// match EgressAllow; advisory: the kernel does not enforce it) or
	// "strict" (the kernel enforces it; with a host allow-list the call is
	// refused until the egress proxy exists).
	Egress      string   `toml:"egress"`
	EgressAllow []string `toml:"egress_allow"`
	// Bwrap is "auto" (default: use bubblewrap when it works here),
	// "required" or "off".
	Bwrap string `toml:"bwrap"`
	// LandlockMinABI is the lowest Landlock ABI the tool accepts (default 6:
	// signal and abstract-socket scoping). A host below it refuses the call.
	LandlockMinABI int `toml:"landlock_min_abi"`
	// Workspace is "rw" (default) or "ro".
	Workspace string `toml:"workspace"`
	// WorkspaceHardlinks is "refuse" (default: a writable workspace holding a
	// hardlinked file is refused, since the target could write through it)
	// or "allow".
	WorkspaceHardlinks string `toml:"workspace_hardlinks"`
	// ReadOnly lists extra paths the target may read (Tier C).
	ReadOnly []string `toml:"read_only"`
	// AllowInterpreters lets the tool run shells, script interpreters and
	// launchers (matched on the resolved executable); policy must still
	// permit the interpreter.run capability.
	AllowInterpreters bool `toml:"allow_interpreters"`
	// Capabilities the tool may ask for, as Cedar sees them on the resource
	// (default: process.exec, fs.write, and interpreter.run and
	// network.egress when the settings above allow them).
	Capabilities []string `toml:"capabilities"`
}

// AgentConfig names one principal.
type AgentConfig struct {
	Name   string   `toml:"name"`
	UID    uint32   `toml:"uid"`
	Groups []string `toml:"groups"`
}

// BudgetConfig limits what a run (calls sharing a run_id) may use. Zero
// means no limit.
type BudgetConfig struct {
	// MaxCallsPerRun: the next call of a run that has made this many is
	// refused with budget_exceeded.
	MaxCallsPerRun int64 `toml:"max_calls_per_run"`
	// MaxCPUSecondsPerRun and MaxOutputBytesPerRun: a run whose calls have
	// used this much (as the executors measured it) gets no more calls.
	MaxCPUSecondsPerRun  int64 `toml:"max_cpu_seconds_per_run"`
	MaxOutputBytesPerRun int64 `toml:"max_output_bytes_per_run"`
	// MaxConcurrentPerPrincipal caps the calls one principal has running.
	MaxConcurrentPerPrincipal int64 `toml:"max_concurrent_per_principal"`
	// RatePerMinute and RateBurst are a token bucket per principal.
	RatePerMinute int64 `toml:"rate_per_minute"`
	RateBurst     int64 `toml:"rate_burst"`
}

// RunConfig configures process.run.
type RunConfig struct {
	Isolation
	Limits Limits `toml:"limits"`
}

// Limits of one call. Zero means "inherit": from the tool's config, then
// Config.Defaults, then the built-in default.
type Limits struct {
	// Timeout is the wall-clock limit ("30s"); at most 10m.
	Timeout Duration `toml:"timeout"`
	// MaxOutput caps stdout+stderr together, in bytes (default 1 MiB).
	MaxOutput int64 `toml:"max_output"`
	// CPUSeconds is RLIMIT_CPU (default 30).
	CPUSeconds uint64 `toml:"cpu_seconds"`
	// AddressSpace is RLIMIT_AS in bytes (default 4 GiB).
	AddressSpace uint64 `toml:"address_space"`
	// NoFile is RLIMIT_NOFILE (default 256).
	NoFile uint64 `toml:"nofile"`
	// NProc is RLIMIT_NPROC (default 1024). It counts per uid: exact only when
	// each executor has a uid of its own (multi-uid mode).
	NProc uint64 `toml:"nproc"`
	// FileSize is RLIMIT_FSIZE in bytes (default 64 MiB).
	FileSize uint64 `toml:"file_size"`
	// Pids caps the processes and threads of a call in its cgroup
	// (default 256), where the host gives calls a cgroup.
	Pids uint64 `toml:"pids"`
	// Memory caps a call's memory in its cgroup, in bytes (default 1 GiB).
	Memory uint64 `toml:"memory"`
}

// ToolConfig configures one tool.
type ToolConfig struct {
	// Name agents call it by: lower-case letters, digits, '.', '-', '_'.
	Name        string `toml:"name"`
	Description string `toml:"description"`
	// Kind is "process" (a native command); skills come with the verifier.
	Kind string `toml:"kind"`
	// Command is the program: an absolute path, resolved at load.
	Command string `toml:"command"`
	// Args are passed before any the agent adds.
	Args []string `toml:"args"`
	// AllowArgs lets the agent append arguments.
	AllowArgs bool `toml:"allow_args"`
	// Env is added to the target's cleared environment. Names that make the
	// loader or an interpreter run other code (LD_*, PYTHONPATH, ...) are
	// refused.
	Env map[string]string `toml:"env"`
	Isolation
	Limits Limits `toml:"limits"`
}

// Duration is a time.Duration written as a string ("30s") in TOML.
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("duration %q must be positive", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes d as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid configuration")

// LoadConfig reads path, or the embedded default when path is empty, and
// validates it.
func LoadConfig(path string) (*Config, error) {
	data := defaultConfig
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	return ParseConfig(data)
}

// ParseConfig decodes TOML strictly and validates the result.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return nil, fmt.Errorf("%w: %s", ErrConfig, strings.TrimSpace(strict.String()))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%w: line %d column %d: %v", ErrConfig, row, col, de)
		}
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return &c, nil
}

func (c *Config) validate() error {
	if c.MaxConnsPerUID == 0 {
		c.MaxConnsPerUID = 16
	}
	if c.MaxConnsPerUID < 0 {
		return errors.New("max_conns_per_uid must be positive")
	}
	if c.OutputFrameMax == 0 {
		c.OutputFrameMax = 4 << 20
	}
	if c.OutputFrameMax < minOutputFrame+frameOverhead {
		return fmt.Errorf("output_frame_max must be at least %d", minOutputFrame+frameOverhead)
	}
	builtin := Limits{
		Timeout: Duration(30 * time.Second), MaxOutput: defaultMaxOutput, CPUSeconds: 30,
		AddressSpace: 4 << 30, NoFile: 256, NProc: 1024, FileSize: 64 << 20,
		Pids: 256, Memory: 1 << 30,
	}
	c.Defaults = c.Defaults.over(builtin)
	if err := c.checkLimits("defaults", c.Defaults); err != nil {
		return err
	}
	if err := c.checkSkills(); err != nil {
		return err
	}
	for i, a := range c.Agents {
		if a.Name == "" || a.Name == "local" {
			return fmt.Errorf("agent %d: a name other than \"local\" is needed", i+1)
		}
	}
	if b := c.Budget; b.MaxCallsPerRun < 0 || b.MaxCPUSecondsPerRun < 0 || b.MaxOutputBytesPerRun < 0 ||
		b.MaxConcurrentPerPrincipal < 0 || b.RatePerMinute < 0 || b.RateBurst < 0 {
		return errors.New("budget limits must not be negative")
	}
	for i, r := range c.WorkspaceRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("workspace_roots %q must be absolute", r)
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return fmt.Errorf("workspace_roots %q: %v", r, err)
		}
		c.WorkspaceRoots[i] = real
	}
	if c.PolicyDir != "" {
		if !filepath.IsAbs(c.PolicyDir) {
			return fmt.Errorf("policy_dir %q must be absolute", c.PolicyDir)
		}
	}
	if err := c.Run.Isolation.validate(); err != nil {
		return fmt.Errorf("run: %v", err)
	}
	c.Run.Limits = c.Run.Limits.over(c.Defaults)
	if err := c.checkLimits("run", c.Run.Limits); err != nil {
		return err
	}
	seen := map[string]bool{ProcessRunTool: true}
	for i := range c.Tools {
		t := &c.Tools[i]
		if err := validToolName(t.Name); err != nil {
			return fmt.Errorf("tool %d: %v", i+1, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q: defined twice (or shadows a built-in)", t.Name)
		}
		seen[t.Name] = true
		if t.Kind != "process" {
			return fmt.Errorf("tool %q: kind %q: only \"process\" is supported", t.Name, t.Kind)
		}
		if err := t.Isolation.validate(); err != nil {
			return fmt.Errorf("tool %q: %v", t.Name, err)
		}
		if !filepath.IsAbs(t.Command) {
			return fmt.Errorf("tool %q: command %q must be an absolute path", t.Name, t.Command)
		}
		resolved, err := resolveExecutable(t.Command)
		if err != nil {
			return fmt.Errorf("tool %q: %v", t.Name, err)
		}
		t.Command = resolved
		if isInterpreter(resolved) && !t.AllowInterpreters {
			return fmt.Errorf("tool %q: %s is an interpreter or launcher; set allow_interpreters to run it", t.Name, resolved)
		}
		for k, v := range t.Env {
			if err := validEnv(k, v); err != nil {
				return fmt.Errorf("tool %q: %v", t.Name, err)
			}
		}
		t.Limits = t.Limits.over(c.Defaults)
		if err := c.checkLimits("tool "+t.Name, t.Limits); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkLimits(where string, l Limits) error {
	if time.Duration(l.Timeout) > maxTimeout {
		return fmt.Errorf("%s: timeout over %v", where, maxTimeout)
	}
	if l.MaxOutput <= 0 || l.MaxOutput > int64(c.OutputFrameMax-frameOverhead) {
		return fmt.Errorf("%s: max_output must be between 1 and %d (output_frame_max less 64 KiB)", where, c.OutputFrameMax-frameOverhead)
	}
	return nil
}

// over fills l's zero fields from base.
func (l Limits) over(base Limits) Limits {
	if l.Timeout == 0 {
		l.Timeout = base.Timeout
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = base.MaxOutput
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = base.CPUSeconds
	}
	if l.AddressSpace == 0 {
		l.AddressSpace = base.AddressSpace
	}
	if l.NoFile == 0 {
		l.NoFile = base.NoFile
	}
	if l.NProc == 0 {
		l.NProc = base.NProc
	}
	if l.FileSize == 0 {
		l.FileSize = base.FileSize
	}
	if l.Pids == 0 {
		l.Pids = base.Pids
	}
	if l.Memory == 0 {
		l.Memory = base.Memory
	}
	return l
}

func validToolName(name string) error {
	if name == "" || len(name) > maxToolNameLen {
		return fmt.Errorf("tool name %q must be 1 to %d characters", name, maxToolNameLen)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		default:
			return fmt.Errorf("tool name %q: only a-z, 0-9, '.', '-', '_'", name)
		}
	}
	return nil
}

func validEnv(k, v string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
		return fmt.Errorf("env %q: invalid name or value", k)
	}
	if dangerousEnv.MatchString(k) {
		return fmt.Errorf("env %q: may not be set for a target", k)
	}
	return nil
}

// validate fills defaults and checks one Isolation.
func (i *Isolation) validate() error {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&i.Tier, "C")
	def(&i.Egress, EgressNone)
	def(&i.Bwrap, "auto")
	def(&i.Workspace, "rw")
	def(&i.WorkspaceHardlinks, "refuse")
	if i.LandlockMinABI == 0 {
		i.LandlockMinABI = 6
	}
	switch {
	case i.Tier != "B" && i.Tier != "C":
		return fmt.Errorf("tier %q: \"B\" or \"C\"", i.Tier)
	case i.Egress != EgressNone && i.Egress != EgressPreflight && i.Egress != EgressStrict:
		return fmt.Errorf("egress %q: none, preflight or strict", i.Egress)
	case i.Bwrap != "auto" && i.Bwrap != "required" && i.Bwrap != "off":
		return fmt.Errorf("bwrap %q: auto, required or off", i.Bwrap)
	case i.Workspace != "rw" && i.Workspace != "ro":
		return fmt.Errorf("workspace %q: rw or ro", i.Workspace)
	case i.WorkspaceHardlinks != "refuse" && i.WorkspaceHardlinks != "allow":
		return fmt.Errorf("workspace_hardlinks %q: refuse or allow", i.WorkspaceHardlinks)
	case i.LandlockMinABI < 1 || i.LandlockMinABI > maxKnownLandlockABI:
		return fmt.Errorf("landlock_min_abi %d: 1 to %d", i.LandlockMinABI, maxKnownLandlockABI)
	case i.Egress == EgressPreflight && len(i.EgressAllow) == 0:
		return errors.New("egress preflight needs egress_allow")
	case i.Tier == "B" && i.Egress == EgressStrict:
		return errors.New("egress strict needs tier C: Tier B cannot enforce it")
	}
	for j, h := range i.EgressAllow {
		i.EgressAllow[j] = canonicalHost(h)
		if i.EgressAllow[j] == "" || strings.ContainsAny(h, "/ ") {
			return fmt.Errorf("egress_allow %q: a host name, IP or .suffix", h)
		}
	}
	if len(i.Capabilities) == 0 {
		i.Capabilities = []string{"process.exec"}
		if i.Workspace == "rw" {
			i.Capabilities = append(i.Capabilities, "fs.write")
		}
		if i.AllowInterpreters {
			i.Capabilities = append(i.Capabilities, "interpreter.run")
		}
		if i.Egress != EgressNone {
			i.Capabilities = append(i.Capabilities, "network.egress")
		}
	}
	for _, c := range i.Capabilities {
		if !slices.Contains(policy.Capabilities(), policy.Capability(c)) {
			return fmt.Errorf("capability %q: one of %v", c, policy.Capabilities())
		}
	}
	for j, p := range i.ReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("read_only %q: must be absolute", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("read_only %q: %v", p, err)
		}
		i.ReadOnly[j] = real
	}
	return nil
}

// maxKnownLandlockABI is the highest Landlock ABI a tool may ask for.
const maxKnownLandlockABI = 7
