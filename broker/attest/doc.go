// Package attest is the broker's record of what it decided and ran: one
// signed attestation per call that reached a decision, permitted or denied,
// chained by hash into an append-only log that can be verified offline.
//
// A [Record] names the call (call and run ids, principal, tool), the
// decision and the deciding policies, the tier and the executor's
// enforcement receipt, the limits, the artifact (the resolved binary's or
// the skill modules' digests), digests of the input, stdout and stderr
// (never their contents), how the call ended, what it used, and when.
// [Encode] gives its canonical encoding, a fixed layout documented in
// encode.go and docs/ATTESTATIONS.md; the record's hash is SHA-256 over
// [RecordContext] and the encoding, and the broker's attestation [Key]
// signs the same bytes with Ed25519. Each record carries its sequence
// number, the hash of the record before it, and the signing key's id.
//
// A [Log] appends records to files in a directory (frames of length,
// record and signature; see frame.go), syncs each before [Log.Append]
// returns, moves to a new file past a size, and on opening cuts off a torn
// last record left by a crash. [VerifyFiles] checks a log; [VerifyRecord]
// checks one attestation as an agent receives it.
//
// # Security
//
// What the log proves: each record was signed by the holder of the
// attestation key, and the records form one chain in which none was
// changed, removed, repeated or moved. What it cannot prove alone: that
// the newest records were not cut off the end, or the oldest files removed
// (anchor the check with records held elsewhere, [VerifyOptions]); nor that
// the broker told the truth when it signed — the record is the broker's
// account, and the receipt the executor's report as the broker received it.
//
// Trust: the attestation key is trusted as the broker itself; it is
// generated on first start into the broker's state directory (0600, owned
// by the broker's uid, refused otherwise) and used for nothing else (its
// PEM label names it). Anyone who can read it can forge records; in
// single-user mode a Tier B target runs under the same uid, so there only
// Tier C's Landlock rules keep targets away from it.
//
// Log files are untrusted input to every reader ([Reader], [VerifyFiles],
// `stockade attest`): a frame's length is bounded by [MaxRecordSize] before
// anything is allocated, records decode strictly (every length checked
// against what remains, booleans 0 or 1, nothing trailing, one encoding per
// record), and key and signature lengths are checked before ed25519 sees
// them. A header's public key is a claim of the file, used only when the
// verifier is given no key, which then proves consistency, not origin.
// [OpenLog] cuts off at most one torn frame and only when no valid record
// follows it; any other damage stops the broker (ErrLogCorrupt) rather than
// being repaired.
//
// The package must not import the broker, executor or verifier roles; it
// depends on ipc for the receipt and limits types only.
package attest
