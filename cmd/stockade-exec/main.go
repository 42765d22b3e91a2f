// Command stockade-exec is the executor: started by the supervisor for one
// call with its socket to the broker as fd 3, it runs the call and exits.
// `stockade-exec stage2` is its second stage, which confines itself and execs
// the target; nobody else starts either.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/stockade-dev/stockade/executor"
	"github.com/stockade-dev/stockade/internal/privdrop"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == executor.Stage2Arg {
		os.Exit(executor.Stage2())
	}
	// Multi-uid mode: `stockade-exec --scratch-root DIR`, started through
	// stockaded's drop trampoline under a uid of the pool.
	var scratchRoot string
	switch {
	case len(os.Args) == 1:
	case len(os.Args) == 3 && os.Args[1] == "--scratch-root" && filepath.IsAbs(os.Args[2]):
		scratchRoot = os.Args[2]
		if err := privdrop.Check(); err != nil {
			os.Stderr.WriteString("stockade-exec: " + err.Error() + "\n")
			os.Exit(1)
		}
	default:
		os.Stderr.WriteString("stockade-exec is started by stockaded, not by hand\n")
		os.Exit(2)
	}
	// Not dumpable: the call's own target (same uid) cannot ptrace this
	// process or read its memory; stage 2 and the target are new programs.
	if err := privdrop.Harden(); err != nil {
		os.Stderr.WriteString("stockade-exec: PR_SET_DUMPABLE: " + err.Error() + "\n")
		os.Exit(1)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("role", "executor", "pid", os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := executor.Serve(ctx, log, os.NewFile(3, "exec"), scratchRoot); err != nil {
		log.Error("executor", "err", err)
		os.Exit(1)
	}
}
