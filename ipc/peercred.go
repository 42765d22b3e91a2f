package ipc

import "slices"

// Cred is a peer's identity as the kernel reported it when the connection was
// made. UID is the principal. PID is for logs, and for the ancestry check of
// [Conn.PeerDescendsFrom], which pins it with a pidfd where the kernel can.
type Cred struct {
	UID uint32
	GID uint32
	PID int32
}

// normalGroups returns primary and groups, sorted, without repeats.
func normalGroups(primary uint32, groups []uint32) []uint32 {
	out := append([]uint32{primary}, groups...)
	slices.Sort(out)
	return slices.Compact(out)
}

// PeerGroups returns the peer's groups as the kernel reported them (see the
// package-level PeerGroups), read when called: the kernel keeps the set of
// the moment the connection was made.
func (c *Conn) PeerGroups() ([]uint32, error) { return PeerGroups(c.nc) }

// InGroups reports whether any of the peer's groups is in allowed.
func InGroups(groups, allowed []uint32) bool {
	for _, g := range groups {
		if slices.Contains(allowed, g) {
			return true
		}
	}
	return false
}
