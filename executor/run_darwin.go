package executor

import (
	"context"
	"log/slog"

	"github.com/stockade-dev/stockade/ipc"
)

// Stage2Arg is argv[1] of the second stage.
const Stage2Arg = "stage2"

// run is not available on macOS yet: the Seatbelt backend comes with the
// sandboxing work. Refusing is the only safe answer.
func run(context.Context, *slog.Logger, *ipc.ExecSpec) (*ipc.Outcome, error) {
	return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "native calls are not available on this platform yet")
}

// Stage2 is not used on macOS yet.
func Stage2() int { return 126 }
