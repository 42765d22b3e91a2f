package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// jsonErrors makes reportError print errors as JSON too (set by --json).
var jsonErrors bool

func cmdTools(socket *string, args []string) (int, error) {
	if len(args) != 0 {
		return exitUsage, fmt.Errorf("tools takes no arguments")
	}
	c, err := dial(socket)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	tools, err := c.Tools()
	if err != nil {
		return 0, err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tTIER\tARGS\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\n", t.Name, t.Kind, t.Tier, t.Args, t.Description)
	}
	return 0, w.Flush()
}

func cmdStatus(socket *string, args []string) (int, error) {
	if len(args) != 0 {
		return exitUsage, fmt.Errorf("status takes no arguments")
	}
	c, err := dial(socket)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	st, err := c.Status()
	if err != nil {
		return 0, err
	}
	printJSON(st)
	return 0, nil
}

func cmdCall(socket *string, args []string) (int, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return exitUsage, fmt.Errorf("call needs a tool name")
	}
	tool := args[0]
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	runID := fs.String("run", "", "run id that groups calls")
	input := fs.String("input", "", "input document: JSON, or @FILE")
	asJSON := fs.Bool("json", false, "print the whole outcome as JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage, err
	}
	req := &ipc.CallRequest{Tool: tool, RunID: *runID, Args: fs.Args()}
	if *input != "" {
		doc := []byte(*input)
		if name, ok := strings.CutPrefix(*input, "@"); ok {
			var err error
			if doc, err = os.ReadFile(name); err != nil {
				return exitUsage, err
			}
		}
		if !json.Valid(doc) {
			return exitUsage, fmt.Errorf("--input is not valid JSON")
		}
		req.Input = string(doc)
	}
	return call(socket, req, *asJSON)
}

func cmdRun(socket *string, args []string) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	workspace := fs.String("workspace", "", "working directory of the command (default: a fresh scratch directory)")
	timeout := fs.Duration("timeout", 0, "wall-clock limit (default: the broker's)")
	maxOutput := fs.Int64("max-output", 0, "cap on stdout+stderr in bytes (default: the broker's)")
	runID := fs.String("run", "", "run id that groups calls")
	asJSON := fs.Bool("json", false, "print the whole outcome as JSON")
	if err := fs.Parse(args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() == 0 {
		return exitUsage, fmt.Errorf("run needs a command after --")
	}
	req := &ipc.CallRequest{Tool: "process.run", RunID: *runID, Args: fs.Args(), TimeoutMS: timeout.Milliseconds(), MaxOutput: *maxOutput}
	if *workspace != "" {
		abs, err := filepath.Abs(*workspace)
		if err != nil {
			return exitUsage, err
		}
		req.Workspace = abs
	}
	return call(socket, req, *asJSON)
}

// call runs req and prints the outcome: as JSON, or the target's stdout and
// stderr with its exit code.
func call(socket *string, req *ipc.CallRequest, asJSON bool) (int, error) {
	jsonErrors = asJSON
	c, err := dial(socket)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	out, err := c.Call(req)
	if err != nil {
		return 0, err
	}
	code := exitCode(out)
	if asJSON {
		printJSON(jsonOutcome(out))
		return code, nil
	}
	writeOutput(os.Stdout, out.Stdout)
	writeOutput(os.Stderr, out.Stderr)
	if w := out.Wasm; w != nil {
		for _, l := range w.Logs {
			fmt.Fprintf(os.Stderr, "stockade: log: %s\n", escape(l))
		}
		for _, m := range w.Messages {
			fmt.Fprintf(os.Stderr, "stockade: message on %s: %s\n", escape(m.Channel), escape(string(m.Body)))
		}
	}
	switch {
	case out.Status == ipc.StatusTimedOut:
		fmt.Fprintf(os.Stderr, "stockade: timed_out: killed after %v\n", time.Duration(out.Durations.Run)*time.Microsecond)
	case out.Status == ipc.StatusQuotaExceeded && out.Wasm != nil:
		fmt.Fprintf(os.Stderr, "stockade: quota_exceeded: %s (fuel used %d)\n", escape(out.Wasm.Resource), out.Wasm.FuelUsed)
	case out.Status == ipc.StatusQuotaExceeded:
		fmt.Fprintf(os.Stderr, "stockade: quota_exceeded (output truncated: %v)\n", out.Truncated)
	case out.Status == ipc.StatusSignaled:
		fmt.Fprintf(os.Stderr, "stockade: killed by %s\n", out.Signal)
	case out.Status == ipc.StatusTrap && out.Wasm != nil:
		fmt.Fprintf(os.Stderr, "stockade: trap: %s\n", escape(out.Wasm.Trap))
	}
	return code, nil
}

func exitCode(out *ipc.Outcome) int {
	switch out.Status {
	case ipc.StatusTimedOut:
		return exitTimedOut
	case ipc.StatusQuotaExceeded:
		return exitQuota
	case ipc.StatusTrap:
		return exitFailed
	}
	return out.ExitCode
}

// outcomeJSON is the --json form of an outcome: output as text.
type outcomeJSON struct {
	CallID    string        `json:"call_id"`
	RunID     string        `json:"run_id,omitempty"`
	Tool      string        `json:"tool"`
	Tier      string        `json:"tier"`
	Status    ipc.Status    `json:"status"`
	ExitCode  int           `json:"exit_code"`
	Signal    string        `json:"signal,omitempty"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	Truncated bool          `json:"truncated"`
	Usage     ipc.Usage     `json:"usage"`
	Durations ipc.Durations `json:"durations"`
	Sandbox   ipc.Receipt   `json:"sandbox"`
	// Wasm is a Tier A call's fuel, host calls, logs and messages.
	Wasm *ipc.WasmReceipt `json:"wasm,omitempty"`
}

func jsonOutcome(o *ipc.Outcome) outcomeJSON {
	return outcomeJSON{
		CallID: o.CallID, RunID: o.RunID, Tool: o.Tool, Tier: o.Tier, Status: o.Status,
		ExitCode: o.ExitCode, Signal: o.Signal, Stdout: string(o.Stdout), Stderr: string(o.Stderr),
		Truncated: o.Truncated, Usage: o.Usage, Durations: o.Durations, Sandbox: o.Sandbox, Wasm: o.Wasm,
	}
}

func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
