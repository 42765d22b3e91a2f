package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// jsonSchema names the JSON output's shape. Every --json output is one
// object:
//
//	{"schema":    "stockade-verifier/v1",
//	 "command":   "package verify",
//	 "result":    "ok" | "invalid" | ... (the exit code's name),
//	 "exit_code": 0,
//	 "error":     {"reason": "signature.invalid", "message": "..."},  // unless ok
//	 "data":      {...}}                                              // the command's answer
//
// A command may have both data and an error: install of a release that is
// quarantined answers the release (data) and exits 3 (untrusted). Members
// are only ever added within v1.
const jsonSchema = "stockade-verifier/v1"

// cli is one run of the command line.
type cli struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	rand           io.Reader // key generation; nil: crypto/rand

	command string // "package verify": the command being run
	json    bool   // --json
	socket  string // --socket
}

// report is what a command answers. outcome is ok unless the command
// finished but the result is not (a quarantined install); err is set with
// it.
type report struct {
	outcome outcome
	reason  string
	message string
	data    any
	human   func(p *printer)
}

type jsonOutput struct {
	Schema   string     `json:"schema"`
	Command  string     `json:"command"`
	Result   string     `json:"result"`
	ExitCode int        `json:"exit_code"`
	Error    *jsonError `json:"error,omitempty"`
	Data     any        `json:"data,omitempty"`
}

type jsonError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// finish prints the report or the error and returns the exit code.
func (c *cli) finish(rep *report, err error) int {
	if err != nil {
		o, reason := outcomeOf(err)
		rep = &report{outcome: o, reason: reason, message: err.Error()}
	}
	if rep.outcome != outOK {
		fmt.Fprintf(c.stderr, "stockade-verifier: %s\n", clean(rep.message))
		if rep.outcome == outUsage && c.command != "" {
			if cmd := findCommand(c.command); cmd != nil {
				fmt.Fprintf(c.stderr, "usage: stockade-verifier %s\n", strings.TrimSpace(cmd.name+" "+cmd.synopsis))
			}
		}
	}
	if c.json {
		out := jsonOutput{Schema: jsonSchema, Command: c.command, Result: rep.outcome.String(), ExitCode: rep.outcome.code(), Data: rep.data}
		if rep.outcome != outOK {
			out.Error = &jsonError{Reason: rep.reason, Message: rep.message}
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(c.stderr, "stockade-verifier: writing JSON: %v\n", err)
			return outInternal.code()
		}
	} else if rep.human != nil {
		p := newPrinter(c.stdout)
		rep.human(p)
		p.flush()
	}
	return rep.outcome.code()
}

// flags returns a flag set for the current command with the flags every
// command takes (--json; --socket for those that talk to the daemon).
func (c *cli) flags(online bool) *flag.FlagSet {
	fs := flag.NewFlagSet(c.command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&c.json, "json", c.json, "print one JSON object (schema "+jsonSchema+")")
	if online {
		fs.StringVar(&c.socket, "socket", c.socket, "admin socket")
	}
	return fs
}

// errHelp asks for the command's usage on stdout.
var errHelp = errors.New("help")

// parse parses args with fs, flags and operands in any order ("--" ends
// the flags), and requires between min and max operands (max < 0: any).
func (c *cli) parse(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usagef(err.Error())
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			operands = append(operands, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
	switch {
	case len(operands) < min:
		return nil, usagef(fmt.Sprintf("%s: missing operand", c.command))
	case max >= 0 && len(operands) > max:
		return nil, usagef(fmt.Sprintf("%s: unexpected operand %q", c.command, operands[max]))
	}
	return operands, nil
}

// printer writes human output. Every value that did not come from this
// program goes through clean; tables are aligned with a tabwriter, and
// lines lose their trailing blanks.
type printer struct {
	w     io.Writer
	table bytes.Buffer
	tw    *tabwriter.Writer
}

func newPrinter(w io.Writer) *printer { return &printer{w: w} }

// field prints "label: value", the value cleaned.
func (p *printer) field(label, value string) {
	p.flush()
	fmt.Fprintf(p.w, "%-13s %s\n", label+":", clean(value))
}

// line prints a line of this program's own words; args are cleaned.
func (p *printer) line(format string, args ...string) {
	p.flush()
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = clean(s)
	}
	fmt.Fprintf(p.w, format+"\n", a...)
}

// row prints one row of an aligned table, every cell cleaned (so no cell
// holds a tab or a newline).
func (p *printer) row(cells ...string) {
	if p.tw == nil {
		p.tw = tabwriter.NewWriter(&p.table, 0, 4, 2, ' ', 0)
	}
	for i := range cells {
		cells[i] = clean(cells[i])
	}
	fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
}

// flush ends a table.
func (p *printer) flush() {
	if p.tw == nil {
		return
	}
	p.tw.Flush()
	for _, l := range strings.SplitAfter(p.table.String(), "\n") {
		if l != "" {
			fmt.Fprintln(p.w, strings.TrimRight(l, " \n"))
		}
	}
	p.table.Reset()
	p.tw = nil
}
