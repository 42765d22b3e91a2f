// Command stockade is the agents' CLI: list tools, call one, run an ad-hoc
// command sandboxed, and ask for status.
//
//	stockade [--socket PATH] tools
//	stockade [--socket PATH] call TOOL [--run ID] [--input JSON|@FILE] [--json] [-- ARGS]
//	stockade [--socket PATH] run [--workspace DIR] [--timeout D] [--max-output N] [--json] -- CMD [ARGS]
//	stockade [--socket PATH] status
//
// The socket is --socket, then $STOCKADE_SOCKET, then the default path of a
// single-user stockaded.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
)

const usage = `usage:
  stockade [--socket PATH] tools
  stockade [--socket PATH] call TOOL [--run ID] [--input JSON|@FILE] [--json] [-- ARGS]
  stockade [--socket PATH] run [--workspace DIR] [--timeout D] [--max-output N] [--json] -- CMD [ARGS]
  stockade [--socket PATH] status
  stockade policy check --dir DIR | eval ... | test FILE | schema | digest -- ARGV
  stockade attest verify LOG... [--pubkey K] | show LOG... [--json] [filters] | pubkey --state-dir DIR
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	global := flag.NewFlagSet("stockade", flag.ContinueOnError)
	global.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	socket := global.String("socket", "", "agent socket (default $STOCKADE_SOCKET, then "+ipc.DefaultSocket()+")")
	if err := global.Parse(args); err != nil {
		return exitUsage
	}
	if global.NArg() == 0 {
		global.Usage()
		return exitUsage
	}
	cmd, rest := global.Arg(0), global.Args()[1:]
	var err error
	var code int
	switch cmd {
	case "tools":
		code, err = cmdTools(socket, rest)
	case "status":
		code, err = cmdStatus(socket, rest)
	case "call":
		code, err = cmdCall(socket, rest)
	case "run":
		code, err = cmdRun(socket, rest)
	case "policy":
		return cmdPolicy(rest)
	case "attest":
		return cmdAttest(rest)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "stockade: unknown command %q\n%s", cmd, usage)
		return exitUsage
	}
	if err != nil {
		return reportError(err)
	}
	return code
}

// Exit codes for errors; a call that ran exits with the target's code.
const (
	exitUsage       = 2
	exitInvalid     = 64  // invalid_input
	exitUnavailable = 69  // cannot reach the broker, sandbox_unavailable
	exitInternal    = 70  // internal, protocol
	exitDenied      = 77  // denied, capability_denied, budget_exceeded
	exitTimedOut    = 124 // timed_out
	exitQuota       = 125 // quota_exceeded
	exitFailed      = 127 // failed: the command could not be run
)

func exitCodeOf(c ipc.ErrorClass) int {
	switch c {
	case ipc.ClassInvalidInput:
		return exitInvalid
	case ipc.ClassDenied, ipc.ClassCapabilityDenied, ipc.ClassBudgetExceeded:
		return exitDenied
	case ipc.ClassTimedOut:
		return exitTimedOut
	case ipc.ClassQuotaExceeded:
		return exitQuota
	case ipc.ClassFailed:
		return exitFailed
	case ipc.ClassSandboxUnavailable:
		return exitUnavailable
	default:
		return exitInternal
	}
}

func reportError(err error) int {
	var e *ipc.Error
	if errors.As(err, &e) {
		if jsonErrors {
			printJSON(map[string]any{"error": e})
		}
		fmt.Fprintf(os.Stderr, "stockade: %s\n", e)
		return exitCodeOf(e.Class)
	}
	if jsonErrors {
		printJSON(map[string]any{"error": map[string]string{"class": "unavailable", "message": err.Error()}})
	}
	fmt.Fprintf(os.Stderr, "stockade: %v\n", err)
	return exitUnavailable
}

func dial(socket *string) (*client.Client, error) {
	return client.Dial(client.SocketPath(*socket), 0)
}
