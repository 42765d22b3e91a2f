// Package trust is the verifier's trust store: which publisher key owns
// which skill id, where each signed release of a skill is in its
// lifecycle, what has been revoked, and an audit log of every decision.
// It decides on skills that verifier/skill has already verified; it reads
// no archives itself.
//
// Publishers are known by key fingerprint (skill.Fingerprint), never by
// name. A skill id belongs to the key of its first promoted release (trust
// on first use, pinned by an admin, never automatically). A release is one
// signed statement, named by its digest; its states are drawn on State.
// Admit quarantines every release that is new to the store with its
// reasons (new_publisher, new_skill, key_mismatch, new_capabilities,
// audit_failed, update), unless Options.AutoActivate lets a clean update
// by the owner key run at once. Promote makes a quarantined release
// active, and only the exact statement digest the admin reviewed.
//
// # Security
//
// Who may send bytes: the verifier process alone, through this API, on
// skills skill.Open returned. Their content is still the publisher's: a
// key that signed an archive may be an attacker's own. So Admit never
// makes a release active on a key's say-so: only the id's owner key may
// auto-activate an update, only for nothing beyond the capabilities an
// admin approved, and only when enabled. A release by another key than
// the owner's stays quarantined key_mismatch, and Promote refuses it:
// changing an id's key takes a rotation signed by both keys (Rotate).
//
// Sequences order a publisher's releases. Admit refuses a sequence below
// the id's high-water mark (rollback) and the mark again with another
// statement (equivocation, kept in the state and the log). The mark is
// the highest sequence signed for the id by the signing key or the owner
// key, so a stranger's key cannot raise it and lock the owner out.
// Revocation, of a key or a statement digest, is permanent and takes
// effect on the next call: Active refuses, Accept (skill.Open's accept
// function) and Admit refuse the key's archives, Promote and Enable
// refuse revoked releases.
//
// What it trusts on disk: the store directory and its files must be
// owned by the calling uid, not writable by group or others, and plain
// (no symbolic links, no hard links, nothing unexpected); Open refuses
// anything else, and opens files through an os.Root. Whoever runs as the
// verifier's uid can rewrite the store entirely; the checks stop other
// users and mistakes, not that uid. state.json is parsed strictly and
// checked field by field (one active release at most, the owner's, known
// states, valid ids, digests and fingerprints), so damage refuses to open
// rather than grants.
//
// Every write is atomic: a temporary file, fsync, rename, fsync of the
// directory. Each decision is first appended to audit.log (fsynced),
// then written to state.json, which names the last record it holds. A
// crash at any point leaves the previous or the next state; Open removes
// temporary files, drops a torn last log line, and records the decisions
// the log holds but the state does not. The log is a hash chain (each line
// carries the SHA-256 of the one before): AuditVerify and Open detect an
// edited, dropped, inserted or reordered record. The chain is not signed
// or anchored elsewhere, so it proves the log is whole against accidents
// and other users, not against the verifier's own uid rewriting all of it.
// One process at a time holds the store (a lock file).
package trust
