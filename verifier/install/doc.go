// Package install puts a verified skill's files on disk and reads them back.
//
// Install writes the files of a skill that skill.Open returned into a
// content-addressed directory, root/<statement digest hex>/, so that a
// crash at any point leaves either no installed skill or a whole one:
//
//	root/.staging-<random>/   created 0700, files written O_CREATE|O_EXCL 0600,
//	                          every file and directory fsynced
//	root/<digest hex>/        the staging directory renamed, then root fsynced
//	  .statement.json         the signed statement, canonical: hashes to the digest
//	  skill.toml, modules/..., assets/...   the skill's files
//
// Leftover staging directories (a crash before the rename) and trash
// directories (a crash during Remove) start with a dot, are never read as
// skills, and are removed by Clean. Installing the same release again finds
// its directory and verifies it instead (Install is idempotent).
//
// Load takes nothing but the digest (what the trust store keeps): it reads the
// statement kept beside the files, requires it to hash to the digest, and
// re-reads the skill against it: every file's size and SHA-256, and nothing
// else in the directory. The verifier calls it
// at resolve time, so a file changed on disk is detected rather than served.
//
// # Security
//
// Who may send bytes: the verifier alone, through this API, with skills that
// skill.Open verified and statements it parsed. What is on disk is not
// believed: Load re-hashes it every time.
//
// What this package trusts: the root directory must be a directory (not a
// symbolic link) owned by the calling uid and not writable by group or
// others; every function refuses anything else (ReasonRootUnsafe). Whoever
// runs as that uid can rewrite the installed files at will; the checks stop
// other users and accidents, and Load's re-hash turns any change into a
// refusal instead of a wrong module. Within the root every access goes
// through an os.Root, so no name can reach outside it.
//
// What Install checks: that the skill's statement digest is the SHA-256 of its
// canonical statement, that its files are exactly the statement's files with
// their signed sizes and digests (re-hashed from the bytes), and that every
// path is local, relative and without dot segments. It writes with O_EXCL into
// a staging directory it has just created, so it never writes through
// anything that was there before.
//
// What Load checks, before returning any byte: the installed directory and
// every entry in it are plain directories (mode 0700) or regular files
// (mode 0600, one link) owned by the calling uid; no symbolic link, device,
// hard link or other mode; the files are exactly the statement's, the
// directories exactly their parents; each file is read through a limit of its
// signed size while hashed, and its size and SHA-256 must equal the signed
// ones. Every refusal is an *Error whose Reason says what was wrong.
//
// This package is for Unix: it reads owners and link counts from
// syscall.Stat_t.
package install
