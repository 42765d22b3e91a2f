// Package verifier is the role that decides whether a skill may run. It keeps
// the trust store (verifier/trust) and the installed skills (verifier/install)
// in its state directory, verifies archives (verifier/skill) and audits their
// WASM modules (verifier/audit), and serves two channels: admin.sock, where
// admins install, promote, disable, remove, revoke and rotate keys (the admin
// protocol of verifier/admin), and the broker's socketpair, where the broker
// resolves a skill id to its active release: manifest and module bytes, in
// sealed memfds, re-hashed on disk at every resolve.
//
// # Security
//
// admin.sock accepts only root, the configured admin uids and members of the
// configured admin groups, by the kernel's peer credentials (SO_PEERCRED,
// SO_PEERGROUPS) read before any byte, and never a process that descends from
// an executor. The broker link is a socketpair no other process can reach;
// the broker may only ask status and resolve. Every message passes ipc's
// frame cap, body walk and strict decoding; a bad message closes the
// connection, and every argument is parsed again here.
//
// Archives are hostile even from an admin: they arrive as descriptors of
// regular files (the verifier opens no path an admin names), are verified by
// skill.Open before the ZIP is parsed, and their modules are audited before
// anything can run them. What is on disk is not believed either: resolve
// re-hashes every file against the signed statement and quarantines a release
// whose files changed. State changes hold one lock from the first write to
// the last, files are written before the store records a release and removed
// after the store forgets one, and start-up removes whatever a crash left in
// between, so the store and the skills directory always agree.
package verifier
