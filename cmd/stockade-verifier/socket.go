package main

import (
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/ipc"
)

// adminSocketEnv names the environment variable that points the CLI at
// admin.sock.
const adminSocketEnv = "STOCKADE_ADMIN_SOCKET"

// adminSocket returns the admin socket's path: --socket, then
// $STOCKADE_ADMIN_SOCKET, then the default. The default is admin.sock in
// the invoking user's single-user runtime directory when that socket
// exists (stockaded --single-user, the embedded default), and otherwise in
// /run/stockade, where a multi-uid stockaded (run by root) puts it.
func (c *cli) adminSocket() string {
	if c.socket != "" {
		return c.socket
	}
	if v, ok := c.lookupEnv(adminSocketEnv); ok && v != "" {
		return v
	}
	single := filepath.Join(ipc.DefaultRuntimeDir(false), ipc.AdminSocketName)
	if fi, err := os.Stat(single); err == nil && fi.Mode().Type() == os.ModeSocket {
		return single
	}
	return filepath.Join(ipc.DefaultRuntimeDir(true), ipc.AdminSocketName)
}
