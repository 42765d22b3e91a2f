// Command stockaded is the supervisor: it makes the runtime directory and the
// two named sockets, starts the broker and the verifier joined by socketpairs,
// restarts a role that dies, and forks one executor for each spawn request
// from the broker. It parses nothing but those fixed-size requests (and, at
// start-up, the root-owned configuration's user names).
//
//	stockaded [--config FILE] [--single-user] [--runtime-dir DIR] [--state-dir DIR]
//	stockaded setup [--config FILE] [--runtime-dir DIR] [--state-dir DIR]
//
// Started as root without --single-user it runs in multi-uid mode: the
// broker, the verifier and every executor under their own uids.
package main

import (
	"context"
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
	if len(os.Args) > 1 && os.Args[1] == dropCommand {
		os.Exit(runDrop(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == killUIDCommand {
		os.Exit(runKillUID(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "setup" {
		os.Exit(runSetup(os.Args[2:]))
	}
	configPath := flag.String("config", "", "configuration file (default: embedded)")
	singleUser := flag.Bool("single-user", false, "run every role under the invoking uid (implied when not root)")
	runtimeDir := flag.String("runtime-dir", "", "directory for agent.sock and admin.sock")
	stateDir := flag.String("state-dir", "", "directory for the roles' state")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("role", "supervisor")
	if err := run(log, *configPath, *singleUser, *runtimeDir, *stateDir); err != nil {
		log.Error("stockaded stopped", "err", err)
		os.Exit(1)
	}
}

// singleUserCaveats is what single-user mode lacks compared with multi-uid
// mode; it is said at every start.
const singleUserCaveats = `single-user mode: the broker, the verifier, every executor and every target run as uid %d. ` +
	`Compared with multi-uid mode (stockaded as root): a target can signal, ptrace (where Yama allows) and read the files of the daemons and of other calls running as the same uid, ` +
	`unless its tier confines it (Tier C Landlock/bwrap); a Tier B target can read the attestation key and the trust store; ` +
	`RLIMIT_NPROC counts every process of the uid; the broker could write the verifier's state`

func run(log *slog.Logger, configPath string, singleUser bool, runtimeDir, stateDir string) error {
	multi := os.Geteuid() == 0 && !singleUser
	if multi {
		if runtimeDir == "" {
			runtimeDir = ipc.DefaultRuntimeDir(true)
		}
		if stateDir == "" {
			stateDir = defaultSystemStateDir
		}
	} else {
		log.Warn(fmt.Sprintf(singleUserCaveats, os.Getuid()))
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
		// As root, re-exec the very binary running (its inode), not a
		// path someone could have replaced since.
		selfExe:    "/proc/self/exe",
		runtimeDir: runtimeDir, stateDir: stateDir, execs: make(map[int]*os.Process),
	}
	if multi {
		// Root reads the file only once it knows nobody else could have
		// written it.
		if err := configRootOnly(configPath); err != nil {
			return err
		}
	}
	users, err := loadUsers(configPath)
	if err != nil {
		return err
	}
	s.autoActivate = users.AutoActivate
	if multi {
		if s.multi, err = users.resolve(); err != nil {
			return err
		}
		s.scratchRoot = filepath.Join(stateDir, scratchDir)
	}
	unlock, err := s.prepareDirs()
	if err != nil {
		return err
	}
	if multi {
		if s.uids, err = newUIDPool(log, s.selfExe, s.multi.execFirst, s.multi.execLast, s.scratchRoot); err != nil {
			return err
		}
	}
	defer unlock()
	if err := s.listen(); err != nil {
		return err
	}
	defer s.closeListeners()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("stockaded running", "mode", s.mode(), "runtime_dir", runtimeDir, "state_dir", stateDir)
	fmt.Fprintf(os.Stderr, `
Stockade is running (%s mode). In another terminal:

  export STOCKADE_SOCKET=%s
  %s run -- /bin/echo hi
  %s tools

Stop it with Ctrl-C.

`, s.mode(), filepath.Join(runtimeDir, ipc.AgentSocketName), filepath.Join(s.binDir, "stockade"), filepath.Join(s.binDir, "stockade"))
	s.supervise(ctx)
	return nil
}
