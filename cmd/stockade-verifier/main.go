// Command stockade-verifier is the verifier role (`serve`, started by
// stockaded with admin.sock's listener as fd 3 and its handoff channel as
// fd 4) and the admin CLI that talks to it over admin.sock.
//
//	stockade-verifier serve --admin-uid UID [--admin-uid UID ...]
//	stockade-verifier [--socket PATH] status
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/ipc"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "stockade-verifier:", err)
			os.Exit(1)
		}
		return
	}
	fs := flag.NewFlagSet("stockade-verifier", flag.ExitOnError)
	socket := fs.String("socket", "", "admin socket (default: admin.sock beside the default agent socket)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: stockade-verifier [--socket PATH] status\n       stockade-verifier serve --admin-uid UID (started by stockaded)")
	}
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 1 || fs.Arg(0) != "status" {
		fs.Usage()
		os.Exit(2)
	}
	path := *socket
	if path == "" {
		path = filepath.Join(ipc.DefaultRuntimeDir(false), ipc.AdminSocketName)
	}
	if err := status(path); err != nil {
		fmt.Fprintln(os.Stderr, "stockade-verifier:", err)
		os.Exit(1)
	}
}

func status(path string) error {
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	c, err := ipc.NewConn(nc)
	if err != nil {
		nc.Close()
		return err
	}
	defer c.Close()
	if _, err := c.Handshake(ipc.ChannelAdmin, "stockade-verifier-cli"); err != nil {
		return err
	}
	var st ipc.RoleStatus
	if err := c.Call(1, ipc.KindStatus, ipc.Empty{}, &st, ipc.WriteTimeout); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}
