// Command stockade-verifier is the verifier role (`serve`, started by
// stockaded with admin.sock's listener as fd 3 and its handoff channel as
// fd 4) and the admin CLI that talks to it over admin.sock.
//
//	stockade-verifier serve --admin-uid UID [--admin-uid UID ...]
//	stockade-verifier [--socket PATH] status
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier"
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

type uidList []uint32

func (u *uidList) String() string { return fmt.Sprint(*u) }
func (u *uidList) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return err
	}
	*u = append(*u, uint32(v))
	return nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var admins uidList
	fs.Var(&admins, "admin-uid", "uid allowed on admin.sock (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(admins) == 0 {
		return errors.New("at least one --admin-uid is required")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("role", "verifier")
	ln, err := net.FileListener(os.NewFile(ipc.FDListener, "admin.sock"))
	if err != nil {
		return fmt.Errorf("admin listener (fd %d): %w", ipc.FDListener, err)
	}
	uln, ok := ln.(*net.UnixListener)
	if !ok {
		return fmt.Errorf("fd %d is not a unix listener", ipc.FDListener)
	}
	uln.SetUnlinkOnClose(false)
	hf := os.NewFile(ipc.FDSupervisor, "handoff")
	hc, err := net.FileConn(hf)
	hf.Close()
	if err != nil {
		return fmt.Errorf("handoff channel (fd %d): %w", ipc.FDSupervisor, err)
	}
	handoff, ok := hc.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("fd %d is not a unix socket", ipc.FDSupervisor)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	how, err := verifier.Restrict()
	if err != nil {
		return fmt.Errorf("restricting the verifier: %w", err)
	}
	log.Info("verifier restricted", "how", how)
	srv := verifier.New(log, admins, "stockade-exec")
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeAdmin(ctx, uln) }()
	go func() { errc <- srv.ServeLinks(ctx, handoff) }()
	log.Info("verifier serving")
	err = <-errc
	stop()
	<-errc
	if ctx.Err() != nil {
		return nil
	}
	return err
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
