// Package executor runs one call: it reads an [ipc.ExecSpec] from the socket
// the supervisor handed it as fd 3, starts the target through a second stage
// of itself, watches it (output quota, wall clock, the broker going away),
// leaves no process of the call behind and reports an [ipc.Outcome].
//
// The process tree of a call:
//
//	stockade-exec (stage 1: child subreaper, holds fd 3 to the broker)
//	  └─ stockade-exec stage2 → execve(target)   own session and process group
//	       └─ whatever the target forks            reparented to stage 1 if orphaned
//
// Stage 2 exists because Go has no hook between fork and exec: it is the
// process that applies the sandbox to itself — rlimits, then no_new_privs
// (later Landlock and seccomp) — and then replaces itself with the target, so
// the target inherits exactly that and the Go runtime never runs under
// RLIMIT_AS.
//
// # Security
//
// The spec comes from the broker over a socketpair that only the supervisor
// and the broker ever held; it flows down the trust gradient and is applied as
// given, after a shape check. The peer's uid must be the executor's own or
// root (the supervisor made the pair). The target is hostile from the moment
// it runs: its output is read in bounded chunks under one quota, and it never
// sees fd 3 (every descriptor above 2 is close-on-exec before the target
// starts).
package executor
