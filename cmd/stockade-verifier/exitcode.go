package main

// Exit codes. This table is the contract scripts rely on: the numbers and
// names never change meaning, new outcomes get new numbers. It is the one
// place they are defined; docs/SKILLS.md ("The admin CLI") repeats it, and
// a test keeps the two equal.
//
//	code  result        meaning
//	0     ok            done: verified, installed and active, promoted, ...
//	1     invalid       a signature or signed digest does not match: the bytes
//	                    are not what the key signed (tampered), or a key file's
//	                    passphrase is wrong
//	2     usage         bad command, flags or arguments
//	3     untrusted     valid, but not trusted to run: quarantined (new
//	                    publisher, new skill, new capabilities, update), or the
//	                    skill has no active release
//	4     key_mismatch  signed by another key than the one the skill id is
//	                    pinned to (quarantined)
//	5     revoked       the key or the release is revoked
//	6     rollback      a sequence below the skill's high-water mark, or the
//	                    same sequence with other contents (equivocation)
//	7     audit_failed  the WASM audit found problems (quarantined)
//	8     malformed     an archive, envelope, statement, manifest or key file
//	                    that does not parse, is unsafe or over a limit; nothing
//	                    is proven about who made it
//	9     unavailable   the verifier is not reachable, or a local file could
//	                    not be read or written
//	10    denied        admin.sock refused the caller (not an admin)
//	11    wrong_digest  promote/remove/revoke named a digest the release does
//	                    not have
//	12    not_found     no such skill, release, key or file
//	13    conflict      the release's state does not allow the change (remove
//	                    an active release, enable one that is not disabled)
//	14    damaged       the verifier's store is damaged: doctor found problems,
//	                    an installed file changed, the audit chain broke
//	15    internal      the verifier or this command failed unexpectedly
//
// outcomeOf (reasons.go) maps every reason code of verifier/skill,
// verifier/trust, verifier/install and verifier/admin to one of these.

// outcome is a command's result class and its exit code.
type outcome int

const (
	outOK          outcome = 0
	outInvalid     outcome = 1
	outUsage       outcome = 2
	outUntrusted   outcome = 3
	outKeyMismatch outcome = 4
	outRevoked     outcome = 5
	outRollback    outcome = 6
	outAuditFailed outcome = 7
	outMalformed   outcome = 8
	outUnavailable outcome = 9
	outDenied      outcome = 10
	outWrongDigest outcome = 11
	outNotFound    outcome = 12
	outConflict    outcome = 13
	outDamaged     outcome = 14
	outInternal    outcome = 15
)

// outcomeNames are the "result" members of the JSON output, by code.
var outcomeNames = [...]string{
	outOK:          "ok",
	outInvalid:     "invalid",
	outUsage:       "usage",
	outUntrusted:   "untrusted",
	outKeyMismatch: "key_mismatch",
	outRevoked:     "revoked",
	outRollback:    "rollback",
	outAuditFailed: "audit_failed",
	outMalformed:   "malformed",
	outUnavailable: "unavailable",
	outDenied:      "denied",
	outWrongDigest: "wrong_digest",
	outNotFound:    "not_found",
	outConflict:    "conflict",
	outDamaged:     "damaged",
	outInternal:    "internal",
}

// String returns the outcome's name.
func (o outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "internal"
}

// code returns the exit code.
func (o outcome) code() int { return int(o) }
