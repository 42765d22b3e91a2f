package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier"
)

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
