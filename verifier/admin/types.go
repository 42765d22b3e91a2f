package admin

import (
	"github.com/stockade-dev/stockade/ipc"
)

// Release is one signed release of a skill as the verifier's trust store
// holds it: the reply to install and promote, and each line of list.
type Release struct {
	ID       string `msgpack:"id" json:"id"`
	Version  string `msgpack:"version" json:"version"`
	Sequence uint64 `msgpack:"sequence" json:"sequence"`
	// Digest is the SHA-256 of the signed statement ("sha256:<hex>"): what
	// promote --digest names.
	Digest string `msgpack:"digest" json:"digest"`
	// Publisher is the signing key's fingerprint ("ed25519:SHA256:...").
	Publisher string `msgpack:"publisher" json:"publisher"`
	// State is quarantined, active, superseded, disabled or revoked.
	State string `msgpack:"state" json:"state"`
	// Reasons say why the release was quarantined (new_publisher,
	// new_skill, key_mismatch, new_capabilities, audit_failed, update,
	// tampered); they are kept after promotion as its history.
	Reasons []string `msgpack:"reasons" json:"reasons"`
	// AuditProblems are the names of the audit checks that failed, as
	// "<module path>: <check>".
	AuditProblems []string         `msgpack:"audit_problems" json:"audit_problems"`
	Capabilities  ipc.Capabilities `msgpack:"capabilities" json:"capabilities"`
	// FirstSeen and Changed are RFC 3339 times (UTC).
	FirstSeen string `msgpack:"first_seen" json:"first_seen"`
	Changed   string `msgpack:"changed" json:"changed"`
	// Audit is the WASM audit of every module; only install's reply
	// carries it.
	Audit *AuditReport `msgpack:"audit,omitempty" json:"audit,omitempty"`
}

// Release states.
const (
	StateQuarantined = "quarantined"
	StateActive      = "active"
	StateSuperseded  = "superseded"
	StateDisabled    = "disabled"
	StateRevoked     = "revoked"
)

// AuditReport is the WASM audit of a release's modules.
type AuditReport struct {
	// OK is set when every check of every module passed.
	OK bool `msgpack:"ok" json:"ok"`
	// Allowed lists the host imports the manifest's capabilities allow,
	// as "module.name", sorted.
	Allowed []string      `msgpack:"allowed" json:"allowed"`
	Modules []ModuleAudit `msgpack:"modules" json:"modules"`
}

// ModuleAudit is the audit of one module.
type ModuleAudit struct {
	Path   string `msgpack:"path" json:"path"`
	SHA256 string `msgpack:"sha256" json:"sha256"` // "sha256:<hex>"
	Size   int64  `msgpack:"size" json:"size"`
	OK     bool   `msgpack:"ok" json:"ok"`
	// Checks lists every check in a fixed order (verifier/audit's), each
	// with pass or fail and the value found.
	Checks []Check `msgpack:"checks" json:"checks"`
	// MemoryMaxPages is the maximum memory (64 KiB pages) the module runs
	// with; MemoryMaxImposed says the module declared none and this one
	// was imposed.
	MemoryMaxPages   uint32 `msgpack:"memory_max_pages" json:"memory_max_pages"`
	MemoryMaxImposed bool   `msgpack:"memory_max_imposed" json:"memory_max_imposed"`
}

// Check is one line of a module's audit. Name is stable (verifier/audit's
// Check* constants); Found and Limit are for people.
type Check struct {
	Name  string `msgpack:"name" json:"name"`
	OK    bool   `msgpack:"ok" json:"ok"`
	Found string `msgpack:"found" json:"found"`
	Limit string `msgpack:"limit,omitempty" json:"limit,omitempty"`
}

// SkillInfo answers show: everything the store holds about one skill id.
type SkillInfo struct {
	ID string `msgpack:"id" json:"id"`
	// Owner is the fingerprint of the key the id is pinned to; "" until
	// a release is first promoted.
	Owner string `msgpack:"owner" json:"owner"`
	// Current is the digest of the last promoted release ("" if none).
	Current string `msgpack:"current" json:"current"`
	// Approved are the capabilities of the last promoted release: an
	// update asking for more is quarantined new_capabilities.
	Approved ipc.Capabilities `msgpack:"approved" json:"approved"`
	// HighWater is the highest sequence signed for the id by each key.
	HighWater []HighWater `msgpack:"high_water" json:"high_water"`
	// Releases are by sequence.
	Releases      []Release      `msgpack:"releases" json:"releases"`
	Equivocations []Equivocation `msgpack:"equivocations" json:"equivocations"`
}

// HighWater is the highest sequence one key signed for a skill id.
type HighWater struct {
	Publisher string `msgpack:"publisher" json:"publisher"`
	Sequence  uint64 `msgpack:"sequence" json:"sequence"`
	Digest    string `msgpack:"digest" json:"digest"`
}

// Equivocation is a refused statement that reused a sequence with other
// content: evidence that the key signed two releases as one.
type Equivocation struct {
	Sequence  uint64 `msgpack:"sequence" json:"sequence"`
	Publisher string `msgpack:"publisher" json:"publisher"`
	Kept      string `msgpack:"kept" json:"kept"`
	Refused   string `msgpack:"refused" json:"refused"`
	Time      string `msgpack:"time" json:"time"`
}

// Key is a publisher key as the trust store knows it.
type Key struct {
	Fingerprint string `msgpack:"fingerprint" json:"fingerprint"`
	// Skills are the ids pinned to the key, sorted.
	Skills []string `msgpack:"skills" json:"skills"`
	// Releases counts the releases in the store that the key signed.
	Releases int  `msgpack:"releases" json:"releases"`
	Revoked  bool `msgpack:"revoked" json:"revoked"`
	// RevokedAt is when (RFC 3339), if Revoked.
	RevokedAt string `msgpack:"revoked_at,omitempty" json:"revoked_at,omitempty"`
}

// DoctorReport is what doctor found. Doctor changes nothing.
type DoctorReport struct {
	// OK is set when Problems is empty.
	OK bool `msgpack:"ok" json:"ok"`
	// AuditRecords is the number of records in the trust store's audit
	// log, whose chain doctor verified.
	AuditRecords uint64 `msgpack:"audit_records" json:"audit_records"`
	// Releases lists every release the store holds and what its files on
	// disk are.
	Releases []DoctorRelease `msgpack:"releases" json:"releases"`
	Problems []Problem       `msgpack:"problems" json:"problems"`
}

// DoctorRelease is one release's files as doctor found them.
type DoctorRelease struct {
	ID      string `msgpack:"id" json:"id"`
	Version string `msgpack:"version" json:"version"`
	Digest  string `msgpack:"digest" json:"digest"`
	State   string `msgpack:"state" json:"state"`
	// Files is "verified" (every file re-hashed against the signed
	// statement), "missing", "tampered", or "absent" (a revoked release
	// whose files were removed, which is fine).
	Files string `msgpack:"files" json:"files"`
}

// Values of DoctorRelease.Files.
const (
	FilesVerified = "verified"
	FilesMissing  = "missing"
	FilesTampered = "tampered"
	FilesAbsent   = "absent"
)

// Problem is one thing doctor found wrong.
type Problem struct {
	// Kind is one of the Problem* constants.
	Kind string `msgpack:"kind" json:"kind"`
	// Subject names what is wrong: "id@version", a digest, a file.
	Subject string `msgpack:"subject" json:"subject"`
	Detail  string `msgpack:"detail" json:"detail"`
}

// Problem kinds.
const (
	ProblemStore      = "store"       // the trust store's state does not check out
	ProblemAuditChain = "audit_chain" // the audit log's hash chain does not verify
	ProblemTampered   = "tampered"    // an installed release's files differ from its signed statement
	ProblemMissing    = "missing"     // a release the store holds has no files on disk
	ProblemOrphan     = "orphan"      // files on disk for a release the store does not hold
	ProblemLeftover   = "leftover"    // a staging or trash directory an interrupted install left
)

// The request bodies on admin.sock.

// InstallRequest carries nothing: the archive and its .sig travel as two
// file descriptors (SCM_RIGHTS) with the request frame, in that order.
type InstallRequest struct{}

// SkillRef names a skill: show, disable, enable.
type SkillRef struct {
	ID string `msgpack:"id" json:"id"`
}

// ReleaseRef names a release: promote and remove (Digest "" in remove:
// the one release of that version), revoke_skill (Version unused).
type ReleaseRef struct {
	ID      string `msgpack:"id" json:"id"`
	Version string `msgpack:"version" json:"version"`
	Digest  string `msgpack:"digest" json:"digest"`
}

// KeyRef names a key: revoke_key.
type KeyRef struct {
	Fingerprint string `msgpack:"fingerprint" json:"fingerprint"`
}

// RotationRequest carries a key-rotation envelope (import_rotation).
type RotationRequest struct {
	Envelope []byte `msgpack:"envelope" json:"envelope"`
}

// ReleaseList answers list.
type ReleaseList struct {
	Releases []Release `msgpack:"releases" json:"releases"`
}

// KeyList answers trust_list.
type KeyList struct {
	Keys []Key `msgpack:"keys" json:"keys"`
}
