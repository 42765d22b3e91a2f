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

	"github.com/stockade-dev/stockade/internal/privdrop"
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

// serve runs the verifier role:
//
//	stockade-verifier serve --state-dir DIR --admin-uid UID [--admin-uid UID ...]
//	    [--admin-gid GID ...] [--auto-activate]
//
// started by stockaded with admin.sock's listener as fd 3 and the handoff
// channel (broker links) as fd 4. DIR is the verifier's own directory (0700,
// its uid): the trust store in DIR/trust, installed skills in DIR/skills.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var admins, adminGroups uidList
	fs.Var(&admins, "admin-uid", "uid allowed on admin.sock (repeatable; root always is)")
	fs.Var(&adminGroups, "admin-gid", "group whose members may use admin.sock (repeatable)")
	stateDir := fs.String("state-dir", "", "the verifier's state directory (trust store and installed skills)")
	autoActivate := fs.Bool("auto-activate", false, "let a clean update by a skill's pinned key become active without an admin")
	multiUID := fs.Bool("multi-uid", false, "started by stockaded's drop trampoline: refuse to run with any way back to root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *multiUID {
		if err := privdrop.Check(); err != nil {
			return err
		}
	}
	// Not dumpable: no core, and /proc/PID stays root's, so not even a
	// process of the same uid can read the verifier's memory.
	if err := privdrop.Harden(); err != nil {
		return fmt.Errorf("PR_SET_DUMPABLE: %w", err)
	}
	if len(admins) == 0 && len(adminGroups) == 0 {
		return errors.New("at least one --admin-uid or --admin-gid is required")
	}
	if *stateDir == "" {
		return errors.New("--state-dir is required")
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
	// Open the store and repair the skills directory before confinement
	// (the same rules apply after it: both live in the state directory).
	srv, err := verifier.New(verifier.Config{
		Log: log, StateDir: *stateDir, AdminUIDs: admins, AdminGIDs: adminGroups,
		ExecutorName: "stockade-exec", AutoActivate: *autoActivate,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	how, err := verifier.Restrict(*stateDir)
	if err != nil {
		return fmt.Errorf("restricting the verifier: %w", err)
	}
	log.Info("verifier restricted", "how", how)
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeAdmin(ctx, uln) }()
	go func() { errc <- srv.ServeLinks(ctx, handoff) }()
	log.Info("verifier serving", "state_dir", *stateDir, "auto_activate", *autoActivate)
	err = <-errc
	stop()
	<-errc
	if ctx.Err() != nil {
		return nil
	}
	return err
}
