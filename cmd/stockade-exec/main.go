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
	"syscall"

	"github.com/stockade-dev/stockade/executor"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == executor.Stage2Arg {
		os.Exit(executor.Stage2())
	}
	if len(os.Args) != 1 {
		os.Stderr.WriteString("stockade-exec is started by stockaded, not by hand\n")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("role", "executor", "pid", os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := executor.Serve(ctx, log, os.NewFile(3, "exec")); err != nil {
		log.Error("executor", "err", err)
		os.Exit(1)
	}
}
