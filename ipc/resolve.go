package ipc

// ResolveFrameMax caps the resolve reply on the verifier channel: a
// skill.toml may take 64 KiB, and its manifest travels re-encoded with the
// modules' digests. Only the broker's reader of that reply raises its cap.
const ResolveFrameMax = 256 << 10

// The resolve conversation on the verifier channel:
//
//	broker                                    verifier
//	  resolve{id, version?} ────────────────►  reads the trust store's current state,
//	                                           re-hashes the release's files on disk
//	                         ◄──────────────── resolve{Resolved} + one sealed memfd per
//	                                           module, in Modules order (SCM_RIGHTS)
//	                                           | error{reason: not_found, not_active,
//	                                             disabled, revoked, tampered, ...}
//
// Only an active release resolves. A file that changed on disk quarantines
// the release (reason tampered) and the resolve fails.

// ResolveRequest asks the verifier for the active release of a skill.
type ResolveRequest struct {
	ID string `msgpack:"id" json:"id"`
	// Version, when set, must be the active release's version; "" takes
	// whatever release is active.
	Version string `msgpack:"version,omitempty" json:"version,omitempty"`
}

// Resolved answers resolve: the active release of a skill, verified on disk
// just now.
type Resolved struct {
	ID       string `msgpack:"id" json:"id"`
	Version  string `msgpack:"version" json:"version"`
	Sequence uint64 `msgpack:"sequence" json:"sequence"`
	// Digest is the SHA-256 of the signed statement ("sha256:<hex>"), the
	// release's name in attestations.
	Digest string `msgpack:"digest" json:"digest"`
	// Publisher is the signing key's fingerprint.
	Publisher string        `msgpack:"publisher" json:"publisher"`
	Manifest  SkillManifest `msgpack:"manifest" json:"manifest"`
	// Modules are the modules the manifest's tools name, each once, in
	// path order; the n-th descriptor sent with the reply holds the n-th.
	Modules []ResolvedModule `msgpack:"modules" json:"modules"`
}

// SkillManifest is a skill's skill.toml as the verifier checked it.
type SkillManifest struct {
	Name         string       `msgpack:"name" json:"name"`
	Publisher    string       `msgpack:"publisher" json:"publisher"` // display name only
	Description  string       `msgpack:"description" json:"description"`
	Tools        []SkillTool  `msgpack:"tools" json:"tools"`
	Capabilities Capabilities `msgpack:"capabilities" json:"capabilities"`
	Limits       SkillLimits  `msgpack:"limits" json:"limits"`
}

// SkillTool is one tool a skill exports.
type SkillTool struct {
	Name         string `msgpack:"name" json:"name"`
	Module       string `msgpack:"module" json:"module"` // "modules/x.wasm"
	Export       string `msgpack:"export" json:"export"`
	Description  string `msgpack:"description" json:"description"`
	InputSchema  string `msgpack:"input_schema" json:"input_schema"`
	OutputSchema string `msgpack:"output_schema,omitempty" json:"output_schema,omitempty"`
}

// Capabilities are the host capabilities a skill asks for (and an admin
// approved by promoting it). The broker grants them per call.
type Capabilities struct {
	HTTP     []string `msgpack:"http" json:"http"`
	Secrets  []string `msgpack:"secrets" json:"secrets"`
	Storage  bool     `msgpack:"storage" json:"storage"`
	Channels []string `msgpack:"channels" json:"channels"`
}

// SkillLimits are the limits a skill asks for; zero means the host's
// default. The broker clamps each to the operator's maximum.
type SkillLimits struct {
	Fuel        uint64 `msgpack:"fuel" json:"fuel"`
	MemoryBytes uint64 `msgpack:"memory_bytes" json:"memory_bytes"`
	TimeoutMS   int64  `msgpack:"timeout_ms" json:"timeout_ms"`
}

// ResolvedModule describes one module; its bytes are in the sealed memfd
// sent with the reply.
type ResolvedModule struct {
	Path   string `msgpack:"path" json:"path"`
	SHA256 string `msgpack:"sha256" json:"sha256"` // "sha256:<hex>"
	Size   int64  `msgpack:"size" json:"size"`
	// MemoryLimitPages is the memory cap (64 KiB pages) the module was
	// audited against: the runtime must impose it (a module that declares
	// no maximum passed the audit with this one).
	MemoryLimitPages uint32 `msgpack:"memory_limit_pages" json:"memory_limit_pages"`
}
