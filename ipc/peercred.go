package ipc

// Cred is a peer's identity as the kernel reported it when the connection was
// made. UID is the principal. PID is for logs, and for the ancestry check of
// [Conn.PeerDescendsFrom], which pins it with a pidfd where the kernel can.
type Cred struct {
	UID uint32
	GID uint32
	PID int32
}
