// Command stockade-broker is the broker role. stockaded starts it with
// agent.sock's listener as fd 3 and its spawn channel as fd 4; it is not meant
// to be started by hand.
//
//	stockade-broker [--config FILE] --state-dir DIR [--mode single-user]
//	stockade-broker reload [--socket PATH]   (asks the running broker to reload its policies)
//	stockade-broker pubkey --state-dir DIR   (prints the attestation public key)
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/stockade-dev/stockade/broker"
	"github.com/stockade-dev/stockade/broker/attest"
	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/internal/privdrop"
	"github.com/stockade-dev/stockade/ipc"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "reload" {
		os.Exit(reload(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "pubkey" {
		os.Exit(pubkey(os.Args[2:]))
	}
	configPath := flag.String("config", "", "configuration file (default: the embedded configuration)")
	stateDir := flag.String("state-dir", "", "state directory (required)")
	mode := flag.String("mode", "single-user", "single-user or multi-uid")
	flag.StringVar(&runtimeDir, "runtime-dir", "", "the runtime directory (no workspace may overlap it)")
	flag.BoolVar(&noRestrict, "no-restrict", false, "skip Landlock and seccomp on the broker itself (debugging only)")
	flag.Var(&agentGIDs, "agent-gid", "multi-uid: members of this group may call the broker (repeatable)")
	flag.StringVar(&scratchRoot, "scratch-root", "", "multi-uid: where executors make their calls' directories")
	flag.StringVar(&wasmCache, "wasm-cache", "", "the compiled-code cache of Tier A modules (the broker writes it, executors read it)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("role", "broker")
	if err := run(log, *configPath, *stateDir, *mode); err != nil {
		log.Error("broker stopped", "err", err)
		os.Exit(1)
	}
}

var (
	noRestrict  bool
	runtimeDir  string
	agentGIDs   idList
	scratchRoot string
	wasmCache   string
)

func run(log *slog.Logger, configPath, stateDir, mode string) error {
	if stateDir == "" {
		return fmt.Errorf("--state-dir is required")
	}
	switch mode {
	case broker.ModeSingleUser:
	case broker.ModeMultiUID:
		// Started by stockaded's drop trampoline: refuse to run with any
		// way back to root.
		if err := privdrop.Check(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--mode %q: want %s or %s", mode, broker.ModeSingleUser, broker.ModeMultiUID)
	}
	// Not dumpable: no core, and /proc/PID stays root's, so not even a
	// process of the same uid can read the broker's memory.
	if err := privdrop.Harden(); err != nil {
		return fmt.Errorf("PR_SET_DUMPABLE: %w", err)
	}
	cfg, err := broker.LoadConfig(configPath)
	if err != nil {
		return err
	}
	ln, err := net.FileListener(os.NewFile(ipc.FDListener, "agent.sock"))
	if err != nil {
		return fmt.Errorf("agent listener (fd %d): %w", ipc.FDListener, err)
	}
	uln, ok := ln.(*net.UnixListener)
	if !ok {
		return fmt.Errorf("fd %d is not a unix listener", ipc.FDListener)
	}
	// The supervisor owns the socket's name; the broker must not unlink it.
	uln.SetUnlinkOnClose(false)
	spawn, err := unixConnFromFD(ipc.FDSupervisor, "spawn")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	bw := broker.ProbeBwrap()
	if bw.Usable {
		log.Info("bubblewrap usable", "version", bw.Version)
	} else {
		log.Warn("bubblewrap not usable: Tier C runs with Landlock and seccomp only", "reason", bw.Reason)
	}
	key, created, err := attest.LoadOrCreateKey(stateDir)
	if err != nil {
		return fmt.Errorf("attestation key: %w", err)
	}
	alog, err := attest.OpenLog(filepath.Join(stateDir, attest.LogDirName), key, attest.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("attestation log: %w", err)
	}
	defer alog.Close()
	log.Info("attesting calls", "key_id", key.ID(), "new_key", created)
	srv, err := broker.New(broker.Options{
		Log: log, Config: cfg, Mode: mode, StateDir: stateDir, Spawn: spawn,
		Protected:    protectedDirs(configPath, stateDir),
		ExecutorName: "stockade-exec", Bwrap: bw, Host: broker.ProbeHost(bw),
		Attest: alog, AttestPublicKey: attest.FormatPublicKey(key.Public()),
		AgentGIDs: agentGIDs, ScratchRoot: scratchRoot, WasmCache: wasmCache,
	})
	if err != nil {
		return err
	}
	// SIGHUP reloads the policies; a set that fails keeps the old one.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if err := srv.ReloadPolicy(); err != nil {
				log.Error("policy reload failed; the previous policies stay in force", "err", err)
			} else {
				log.Info("policies reloaded")
			}
		}
	}()
	if noRestrict {
		log.Warn("not restricting the broker (--no-restrict)")
	} else {
		how, err := broker.Restrict(stateDir, cfg.PolicyDir, wasmCache)
		if err != nil {
			return fmt.Errorf("restricting the broker: %w", err)
		}
		log.Info("broker restricted", "how", how)
	}
	log.Info("broker serving", "tools", len(cfg.Tools)+1)
	return srv.Serve(ctx, uln)
}

func unixConnFromFD(fd uintptr, name string) (*net.UnixConn, error) {
	f := os.NewFile(fd, name)
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s channel (fd %d): %w", name, fd, err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("fd %d is not a unix socket", fd)
	}
	return uc, nil
}

// reload finds the running broker through agent.sock (its status names its
// pid) and sends it SIGHUP: it reloads its policies, keeping the old set if
// the new one fails (its log says which).
func reload(args []string) int {
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	socket := fs.String("socket", "", "agent socket (default $STOCKADE_SOCKET, then the single-user default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := client.Dial(client.SocketPath(*socket), 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stockade-broker reload:", err)
		return 1
	}
	defer c.Close()
	st, err := c.Status()
	if err != nil || st.Broker.PID <= 1 {
		fmt.Fprintln(os.Stderr, "stockade-broker reload: no broker pid:", err)
		return 1
	}
	if err := syscall.Kill(st.Broker.PID, syscall.SIGHUP); err != nil {
		fmt.Fprintln(os.Stderr, "stockade-broker reload:", err)
		return 1
	}
	fmt.Printf("sent SIGHUP to the broker (pid %d); its log says whether the new policies took effect\n", st.Broker.PID)
	return 0
}

// pubkey prints the attestation public key kept in a state directory.
func pubkey(args []string) int {
	fs := flag.NewFlagSet("pubkey", flag.ContinueOnError)
	stateDir := fs.String("state-dir", "", "the broker's state directory")
	if err := fs.Parse(args); err != nil || *stateDir == "" {
		fmt.Fprintln(os.Stderr, "usage: stockade-broker pubkey --state-dir DIR")
		return 2
	}
	key, err := attest.LoadKey(filepath.Join(*stateDir, attest.KeyFileName))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stockade-broker pubkey:", err)
		return 1
	}
	fmt.Printf("%s key_id=%s\n", attest.FormatPublicKey(key.Public()), key.ID())
	return 0
}

// protectedDirs are Stockade's paths besides the state directory: the runtime
// directory, the binaries' directory (a target that could replace
// stockade-exec would run unconfined in the next call), the configuration
// file.
func protectedDirs(configPath, stateDir string) []string {
	// The whole state root: the verifier's state is beside the broker's.
	dirs := []string{runtimeDir, filepath.Dir(stateDir)}
	if scratchRoot != "" {
		dirs = append(dirs, scratchRoot)
	}
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	if configPath != "" {
		dirs = append(dirs, configPath)
	}
	return dirs
}

// idList is a repeatable numeric flag.
type idList []uint32

func (l *idList) String() string { return fmt.Sprint(*l) }
func (l *idList) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return err
	}
	*l = append(*l, uint32(n))
	return nil
}
