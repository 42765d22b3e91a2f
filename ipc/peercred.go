package ipc

// Cred is a peer's identity as the kernel reported it when the connection was
// made. UID is the principal; PID is for logs only (it can be reused).
type Cred struct {
	UID uint32
	GID uint32
	PID int32
}
