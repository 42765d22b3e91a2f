// Package verifier is the role that will decide whether a skill may run: it
// verifies signatures, keeps the trust store and audits WASM modules. For now
// it answers Hello and status to the broker (over a socketpair the supervisor
// hands it) and to admins on admin.sock.
//
// # Security
//
// admin.sock accepts only the uids configured as admins (root, and in
// single-user mode the invoking user), checked with the kernel's peer
// credentials before any byte is read. The broker link is a socketpair no
// other process can reach. Every message passes ipc's frame cap, body walk and
// strict decoding; a bad message closes the connection.
package verifier
