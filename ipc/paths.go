package ipc

import (
	"fmt"
	"os"
	"path/filepath"
)

// Names of the only two sockets with a name in the filesystem.
const (
	AgentSocketName = "agent.sock"
	AdminSocketName = "admin.sock"
)

// Descriptors the supervisor hands each role (fd 0-2 are stdio).
const (
	// FDListener is the role's listening socket: agent.sock for the broker,
	// admin.sock for the verifier.
	FDListener = 3
	// FDSupervisor is the role's SOCK_SEQPACKET channel to the supervisor:
	// spawn requests and verifier links for the broker, broker links for the
	// verifier.
	FDSupervisor = 4
	// FDExec is the executor's socket to the broker.
	FDExec = 3
)

// DefaultRuntimeDir is where stockaded puts its sockets when not told
// otherwise: /run/stockade for root in multi-uid mode; otherwise
// $XDG_RUNTIME_DIR/stockade, or $TMPDIR/stockade-<uid> (default /tmp).
func DefaultRuntimeDir(multiUID bool) string {
	if multiUID {
		return "/run/stockade"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "stockade")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("stockade-%d", os.Getuid()))
}

// DefaultSocket is the agent socket of a stockaded started with default
// directories: the single-user one when it exists, else the multi-uid one
// (/run/stockade/agent.sock) when that exists, else the single-user path.
func DefaultSocket() string {
	single := filepath.Join(DefaultRuntimeDir(false), AgentSocketName)
	if _, err := os.Stat(single); err != nil {
		if multi := filepath.Join(DefaultRuntimeDir(true), AgentSocketName); multi != single {
			if _, err := os.Stat(multi); err == nil {
				return multi
			}
		}
	}
	return single
}
