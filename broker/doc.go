// Package broker is the agent-facing role: it serves agent.sock, authenticates
// every agent by the uid the kernel reports, authorizes calls, turns a checked
// call into an [ipc.ExecSpec], asks the supervisor for an executor, drives it,
// and relays the outcome.
//
// # Security
//
// Agents are untrusted. Their bytes pass ipc's frame cap (64 KiB), body walk
// and strict decoding; a malformed or unpermitted message closes the
// connection. The principal is the peer uid from SO_PEERCRED, checked against
// the configured agent uids before Hello; nothing in a message names it. A
// call's program, environment and limits come from the broker's configuration;
// the agent supplies at most arguments (when the tool allows them), a
// workspace (an existing directory, resolved through symlinks) and limits that
// can only tighten the configured ones. Executors are less trusted than the
// broker once they have run a target: their outcome is decoded strictly under
// the output cap. The supervisor (spawn channel) is more trusted.
package broker
