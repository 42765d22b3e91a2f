// Command stockaded is the supervisor: it makes the runtime directory and the
// two named sockets, starts the broker and the verifier joined by socketpairs,
// restarts a role that dies, and forks one executor for each spawn request
// from the broker. It parses nothing but those fixed-size requests.
//
//	stockaded [--config FILE] [--single-user] [--runtime-dir DIR] [--state-dir DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/stockade-dev/stockade/ipc"
)

func main() {
	configPath := flag.String("config", "", "broker configuration file (default: embedded)")
	singleUser := flag.Bool("single-user", false, "run every role under the invoking uid (implied when not root)")
	runtimeDir := flag.String("runtime-dir", "", "directory for agent.sock and admin.sock")
	stateDir := flag.String("state-dir", "", "directory for state and per-call workspaces")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("role", "supervisor")
	if err := run(log, *configPath, *singleUser, *runtimeDir, *stateDir); err != nil {
		log.Error("stockaded stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, configPath string, singleUser bool, runtimeDir, stateDir string) error {
	if os.Geteuid() == 0 && !singleUser {
		return errors.New("multi-uid mode (roles under their own uids) is not implemented yet: run with --single-user")
	}
	if os.Geteuid() == 0 {
		log.Warn("single-user mode as root: every role runs as root, and targets run as uid 0 without capabilities, confined by their tier only")
	}
	if runtimeDir == "" {
		runtimeDir = ipc.DefaultRuntimeDir(false)
	}
	if stateDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("no --state-dir and no home directory: %w", err)
		}
		stateDir = filepath.Join(home, ".local", "state", "stockade")
	}
	var err error
	for _, d := range []*string{&runtimeDir, &stateDir, &configPath} {
		if *d != "" {
			if *d, err = filepath.Abs(*d); err != nil {
				return err
			}
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	s := &supervisor{
		log: log, binDir: filepath.Dir(self), configPath: configPath,
		runtimeDir: runtimeDir, stateDir: stateDir, execs: make(map[int]*os.Process),
	}
	unlock, err := s.prepareDirs()
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.listen(); err != nil {
		return err
	}
	defer s.closeListeners()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("stockaded running", "mode", "single-user", "runtime_dir", runtimeDir, "state_dir", stateDir)
	fmt.Fprintf(os.Stderr, `
Stockade is running (single-user mode). In another terminal:

  export STOCKADE_SOCKET=%s
  %s run -- /bin/echo hi
  %s tools

Stop it with Ctrl-C.

`, filepath.Join(runtimeDir, ipc.AgentSocketName), filepath.Join(s.binDir, "stockade"), filepath.Join(s.binDir, "stockade"))
	s.supervise(ctx)
	return nil
}
