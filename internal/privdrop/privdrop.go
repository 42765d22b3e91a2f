// Package privdrop takes a process from root to one unprivileged identity
// for good, and checks that a process holds no privilege.
//
// stockaded, running as root in multi-uid mode, starts every role through
// itself: a short-lived copy (`stockaded drop …`) calls Drop and then execs
// the role's binary, so nothing of the role ever runs as root. Each role
// calls Check first thing in multi-uid mode and refuses to run if it could
// regain root.
//
// # Security
//
// Drop trusts its caller (root, the supervisor) for the identity and the
// descriptors to keep; it parses nothing else. Capabilities are per thread
// in Linux: Drop locks its goroutine to its OS thread, drops the bounding
// set there, changes uids and gids on every thread (the Go runtime's
// setuid), and the caller execs from that same locked thread, whose
// credentials the new program gets.
package privdrop

import "errors"

// Identity is who a role runs as: exact uid and gid, and exactly these
// supplementary groups (none when empty).
type Identity struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// ErrPrivileged means a process still holds privilege: root ids, a
// capability in some set, no NoNewPrivs, or it could set its uid back to 0.
var ErrPrivileged = errors.New("process can still regain privilege")
