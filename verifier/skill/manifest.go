package skill

import (
	"bytes"
	"reflect"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Manifest is a skill's skill.toml, checked. docs/SKILLS.md gives the file's
// full schema; in short:
//
//	id          = "acme.web"          # publisher.name, lower case
//	name        = "Web fetcher"
//	version     = "1.2.0"             # semver, no build metadata
//	sequence    = 7                   # grows with every release
//	publisher   = "Acme Tools"        # display name; the key is what counts
//	description = "Fetches pages."
//
//	[[entrypoints.tools]]
//	name          = "fetch"
//	module        = "modules/web.wasm"
//	export        = "fetch"
//	description   = "Fetch a URL and return its text."
//	input_schema  = '{"type":"object","properties":{"url":{"type":"string"}}}'
//	output_schema = '{"type":"object"}' # optional
//
//	[capabilities]                    # all optional: nothing asked
//	http     = ["api.example.com"]
//	secrets  = ["api_token"]
//	storage  = true
//	channels = ["notify"]
//
//	[limits]                          # all optional: 0 or absent = the host's default
//	fuel         = 10_000_000
//	memory_bytes = 67_108_864
//	timeout_ms   = 5_000
type Manifest struct {
	ID          ID
	Name        string
	Version     Version
	Sequence    uint64
	Publisher   string
	Description string
	Tools       []Tool
	// Capabilities are what the skill asks for; the admin approves them and
	// the broker grants them per call.
	Capabilities Capabilities
	Limits       ResourceLimits
}

// Tool is one entrypoint: an exported function of a module.
type Tool struct {
	Name        string
	Module      string // archive path, modules/NAME.wasm
	Export      string
	Description string
	// InputSchema and OutputSchema are JSON objects (JSON Schema, passed to
	// agents as they are). OutputSchema may be empty.
	InputSchema  string
	OutputSchema string
}

// Capabilities are the host capabilities a skill asks for.
type Capabilities struct {
	// HTTP lists the hosts the skill may reach through the broker, in the
	// canonical form of policy.ParseHost (lower case, no trailing dot).
	HTTP     []string
	Secrets  []string
	Storage  bool
	Channels []string
}

// ResourceLimits are the limits a skill asks for. Zero means the host's
// default; the broker clamps every value to the operator's maximum.
type ResourceLimits struct {
	Fuel        uint64
	MemoryBytes uint64
	Timeout     time.Duration
}

// Bounds on manifests.
const (
	maxManifestBytes = 64 << 10 // ParseManifest's own bound; Open's is Limits.ManifestBytes
	maxTools         = 64
	maxNameLen       = 64
	maxDescription   = 2048
	maxSchemaBytes   = 16 << 10
	maxSchemaDepth   = 32
	maxCapabilityLen = 64
	maxHosts         = 64
	maxSecrets       = 64
	maxChannels      = 16
	maxFuel          = 1 << 40
	maxMemoryBytes   = 4 << 30
	wasmPageSize     = 64 << 10
	maxTimeoutMS     = 3_600_000
)

// manifestFile is skill.toml as TOML.
type manifestFile struct {
	ID           string          `toml:"id"`
	Name         string          `toml:"name"`
	Version      string          `toml:"version"`
	Sequence     uint64          `toml:"sequence"`
	Publisher    string          `toml:"publisher"`
	Description  string          `toml:"description"`
	Entrypoints  entrypointsFile `toml:"entrypoints"`
	Capabilities capabilityFile  `toml:"capabilities"`
	Limits       limitsFile      `toml:"limits"`
}

type entrypointsFile struct {
	Tools []toolFile `toml:"tools"`
}

type toolFile struct {
	Name         string `toml:"name"`
	Module       string `toml:"module"`
	Export       string `toml:"export"`
	Description  string `toml:"description"`
	InputSchema  string `toml:"input_schema"`
	OutputSchema string `toml:"output_schema"`
}

type capabilityFile struct {
	HTTP     []string `toml:"http"`
	Secrets  []string `toml:"secrets"`
	Storage  bool     `toml:"storage"`
	Channels []string `toml:"channels"`
}

type limitsFile struct {
	Fuel        uint64 `toml:"fuel"`
	MemoryBytes uint64 `toml:"memory_bytes"`
	TimeoutMS   uint64 `toml:"timeout_ms"`
}

// ParseManifest decodes skill.toml strictly and checks every field. TOML
// itself refuses repeated keys; ParseManifest also refuses unknown keys and
// keys that match a field only when case is ignored (go-toml would take
// them), then decodes with go-toml's strict mode. It does not check that
// the modules exist: Open does, against the archive.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, refuse(ReasonManifestMalformed, ManifestPath, "longer than %d bytes", maxManifestBytes)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, refuseErr(ReasonManifestMalformed, ManifestPath, err, "")
	}
	if err := checkTOMLKeys(doc, reflect.TypeFor[manifestFile](), ""); err != nil {
		return nil, refuseErr(ReasonManifestMalformed, ManifestPath, err, "")
	}
	var f manifestFile
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, refuseErr(ReasonManifestMalformed, ManifestPath, err, "")
	}
	return f.manifest()
}
