// Package skill reads, writes and verifies signed skill archives: the
// skill.toml manifest, the signed statement and its DSSE envelope, and the
// ZIP archive that carries a skill's files. docs/SKILLS.md describes the
// format for publishers; this package is its one implementation of record.
//
// Build packs a source directory into a deterministic archive and signs a
// statement of it. Open takes an archive and its detached envelope
// ("<archive>.sig") and returns the verified files and manifest, or an
// *Error whose Reason says what was refused. Trust decisions (which keys
// may own which skill ids, quarantine, rollback) are not made here: Open
// reports who signed, and the trust store decides.
//
// # Security
//
// Who may send bytes: anyone. Archives and envelopes reach the verifier
// from admins who downloaded them from anywhere, so every byte of both is
// hostile until checked, and stays hostile after the signature checks out:
// under trust on first use the signing key may be an attacker's own.
//
// What this package trusts:
//
//   - crypto/ed25519 and crypto/sha256 to be correct, and Ed25519 and
//     SHA-256 to be unforgeable and collision-resistant.
//   - The caller's accept function, for the one question of whether a key
//     may have its archives opened at all (a revoked key: no). Open asks it
//     after the signature verifies and before anything signed is parsed.
//   - archive/zip and compress/flate to decompress an entry correctly,
//     within a byte limit. Not to find entries or names: Open walks the
//     ZIP structure itself first (scanArchive) and requires archive/zip's
//     reading of the central directory to match its own, entry for entry.
//   - go-toml to parse TOML syntax; not to map keys to fields, which it
//     does without regard to case: keys are checked against the schema
//     first, exactly.
//   - encoding/json to tokenize; not to decode members, which it matches
//     without regard to case, letting a repeated member win: members are
//     checked against each type first, exactly and once each.
//
// What Open checks before believing anything, in order: the sizes of the
// envelope and archive; the envelope's shape and payload type; exactly one
// signature, its key and signature lengths (ed25519.Verify panics on a bad
// key length) and keyid; the signature over DSSE's PAE; the caller's
// accept; the statement, strictly and in canonical form; that it names the
// signing key; its file list against the limits; then the archive's size and
// SHA-256 against the statement, all before the ZIP is parsed. Then the ZIP
// is parsed once: its layout must be the strict subset drawn in zipscan.go
// (no prepended, trailing, hidden or overlapping bytes, no comments, no
// zip64, Store or Deflate, no encryption, no data descriptors, regular
// files only, safe ASCII names without duplicates even when case is
// folded), its entries must equal the signed file list, and each file is
// read through a limit of its signed size while hashed. Last, skill.toml is
// parsed from its verified bytes and bound to the statement.
//
// Error messages quote names taken from the bytes (strconv.QuoteToASCII)
// and cut them short, so a refusal printed on a terminal cannot carry
// control sequences or forge further lines.
//
// What is left to the caller: the trust store (pinning keys to skill ids,
// quarantine, rollback and equivocation by sequence, revocation), the WASM
// audit of the modules, and extraction, which must go through os.Root with
// O_EXCL into a content-addressed directory.
package skill
