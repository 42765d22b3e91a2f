package main

import (
	"bufio"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stockade-dev/stockade/broker/attest"
)

// Auditors' tooling for the broker's attestation log. It runs offline, on
// copies of the log as well as on the live directory:
//
//	stockade attest verify LOG... [--pubkey KEY|@FILE] [--after SEQ:HASH] [--contains SEQ:HASH]...
//	stockade attest show LOG... [--json] [--run R] [--principal P] [--tool T] [--since T] [--until T]
//	stockade attest pubkey --state-dir DIR [--json]
//
// A LOG is a log file or a log directory (its attest-*.log files, in
// order). Files are untrusted input: they are parsed by package attest's
// bounded decoder, and every string from a record is printed quoted.

const attestUsage = `usage:
  stockade attest verify LOG... [--pubkey KEY|@FILE] [--after SEQ:HASH] [--contains SEQ:HASH]...
  stockade attest show LOG... [--json] [--run R] [--principal NAME|UID] [--tool T] [--since T] [--until T]
  stockade attest pubkey --state-dir DIR [--json]

A LOG is a file or a directory of attest-*.log files (taken in order).
verify checks every signature with --pubkey (64 hex digits or base64, or
@FILE holding it; without it, the key in the first file's header, which
shows consistency, not origin), the chain across files, and sequence gaps,
repeats and reorders. --after anchors a log whose earlier files are gone on
the last record before it; --contains names records (from agents'
attestations, or a head noted earlier) that must be in it, which detects
a log cut short. It prints the first bad record and exits 1, or a summary
and exits 0.
show prints records (not verified: run verify) one a line, or as JSON
lines; --since and --until take RFC 3339 times or durations before now
(2h), and select on the call's start.
pubkey prints the public key of the attestation key in a state directory.
Exit codes: 0 good, 1 a bad record or file, 2 usage and other errors.
`

const (
	exitAttestBad   = 1
	exitAttestError = 2
)

func cmdAttest(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, attestUsage)
		return exitAttestError
	}
	switch args[0] {
	case "verify":
		return attestVerify(args[1:])
	case "show":
		return attestShow(args[1:])
	case "pubkey":
		return attestPubkey(args[1:])
	case "help", "-h", "--help":
		fmt.Print(attestUsage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "stockade attest: unknown command %q\n%s", args[0], attestUsage)
	return exitAttestError
}

func attestFail(cmd string, err error) int {
	fmt.Fprintf(os.Stderr, "stockade attest %s: %v\n", cmd, err)
	return exitAttestError
}

func attestFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("attest "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// attestParse parses flags that may come before, between or after the
// positional arguments; after "--" everything is positional.
func attestParse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// attestLinks collects repeated SEQ:HASH flags.
type attestLinks []attest.Link

func (l *attestLinks) String() string { return fmt.Sprint(*l) }
func (l *attestLinks) Set(v string) error {
	link, err := attest.ParseLink(v)
	if err != nil {
		return err
	}
	*l = append(*l, link)
	return nil
}

// attestFiles expands directories into their log files.
func attestFiles(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("no LOG given")
	}
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		fs, err := attest.LogFiles(a)
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 {
			return nil, fmt.Errorf("%s has no attest-*.log files", a)
		}
		files = append(files, fs...)
	}
	return files, nil
}

func attestVerify(args []string) int {
	fs := attestFlags("verify")
	pubArg := fs.String("pubkey", "", "")
	after := fs.String("after", "", "")
	var contains attestLinks
	fs.Var(&contains, "contains", "")
	pos, err := attestParse(fs, args)
	if err != nil {
		return attestFail("verify", err)
	}
	files, err := attestFiles(pos)
	if err != nil {
		return attestFail("verify", err)
	}
	var pub ed25519.PublicKey
	if *pubArg != "" {
		text := *pubArg
		if name, ok := strings.CutPrefix(text, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return attestFail("verify", err)
			}
			text = string(b)
		}
		if pub, err = attest.ParsePublicKey(text); err != nil {
			return attestFail("verify", err)
		}
	}
	opts := attest.VerifyOptions{Contains: contains}
	if *after != "" {
		link, err := attest.ParseLink(*after)
		if err != nil {
			return attestFail("verify", err)
		}
		opts.After = &link
	}
	sum, err := attest.VerifyFiles(files, pub, opts)
	var ve *attest.VerifyError
	if errors.As(err, &ve) {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		fmt.Fprintf(os.Stderr, "%d records verified before it\n", sum.Records)
		return exitAttestBad
	}
	if err != nil {
		return attestFail("verify", err)
	}
	fmt.Printf("ok: %d records in %d files, signed by key %s\n", sum.Records, sum.Files, sum.KeyID)
	if sum.Records > 0 {
		fmt.Printf("first %s\nhead  %s\n", sum.First, sum.Head)
	}
	if sum.KeyFromLog {
		fmt.Fprintln(os.Stderr, "warning: no --pubkey; the records were checked against the key the log names, which shows they are consistent, not who signed them")
	}
	return 0
}

// attestShowFilter selects records.
type attestShowFilter struct {
	run, principal, tool string
	since, until         time.Time
}

func (f *attestShowFilter) match(r *attest.Record) bool {
	if f.run != "" && r.RunID != f.run {
		return false
	}
	if f.tool != "" && r.Tool != f.tool {
		return false
	}
	if f.principal != "" && r.Principal.Name != f.principal && strconv.FormatUint(uint64(r.Principal.UID), 10) != f.principal {
		return false
	}
	if !f.since.IsZero() && r.Start < f.since.UnixNano() {
		return false
	}
	if !f.until.IsZero() && r.Start >= f.until.UnixNano() {
		return false
	}
	return true
}

// attestTime reads an RFC 3339 time, or a duration before now.
func attestTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration", s)
	}
	return time.Now().Add(-d), nil
}

func attestShow(args []string) int {
	fs := attestFlags("show")
	asJSON := fs.Bool("json", false, "")
	var f attestShowFilter
	fs.StringVar(&f.run, "run", "", "")
	fs.StringVar(&f.principal, "principal", "", "")
	fs.StringVar(&f.tool, "tool", "", "")
	since := fs.String("since", "", "")
	until := fs.String("until", "", "")
	pos, err := attestParse(fs, args)
	if err != nil {
		return attestFail("show", err)
	}
	if f.since, err = attestTime(*since); err != nil {
		return attestFail("show", err)
	}
	if f.until, err = attestTime(*until); err != nil {
		return attestFail("show", err)
	}
	files, err := attestFiles(pos)
	if err != nil {
		return attestFail("show", err)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, name := range files {
		if err := attestShowFile(w, name, &f, *asJSON); err != nil {
			w.Flush()
			fmt.Fprintf(os.Stderr, "stockade attest show: %v\n", err)
			return exitAttestBad
		}
	}
	return 0
}

// attestJSONLine is one record of `show --json`: where it is, the record's
// fields, its hash and its signature.
type attestJSONLine struct {
	File  string `json:"file"`
	Index int    `json:"index"`
	*attest.Record
	Hash      attest.Digest `json:"hash"`
	Signature string        `json:"signature"`
}

func attestShowFile(w *bufio.Writer, name string, f *attestShowFilter, asJSON bool) error {
	fh, err := os.Open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	rd, err := attest.NewReader(name, fh)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for {
		index := rd.Index()
		s, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		r := &s.Record
		if !f.match(r) {
			continue
		}
		if asJSON {
			line := attestJSONLine{File: name, Index: index, Record: r, Hash: s.Hash, Signature: hex.EncodeToString(s.Signature)}
			if err := enc.Encode(line); err != nil {
				return err
			}
			continue
		}
		attestShowLine(w, &s)
	}
}

// attestShowLine writes one record on one line. Strings that come from
// agents or tools are quoted, so they cannot break the line or write
// terminal controls.
func attestShowLine(w io.Writer, s *attest.Signed) {
	r := &s.Record
	q := strconv.Quote
	fmt.Fprintf(w, "seq=%d time=%s decision=%s principal=%s uid=%d tool=%s run=%s call=%s tier=%s",
		r.Seq, time.Unix(0, r.Start).UTC().Format("2006-01-02T15:04:05.000Z"), r.Decision,
		q(r.Principal.Name), r.Principal.UID, q(r.Tool), q(r.RunID), q(r.CallID), q(r.Tier))
	if r.Result.Error != "" {
		fmt.Fprintf(w, " error=%s", q(string(r.Result.Error)))
	} else {
		fmt.Fprintf(w, " status=%s exit=%d", q(string(r.Result.Status)), r.Result.ExitCode)
		if r.Result.Signal != "" {
			fmt.Fprintf(w, " signal=%s", q(r.Result.Signal))
		}
	}
	if len(r.Policies) > 0 {
		fmt.Fprintf(w, " policies=%s", q(strings.Join(r.Policies, ",")))
	}
	if r.Receipt.Backend != "" {
		fmt.Fprintf(w, " backend=%s landlock=%d", q(r.Receipt.Backend), r.Receipt.LandlockABI)
	}
	if r.Artifact.Name != "" {
		fmt.Fprintf(w, " artifact=%s", q(r.Artifact.Name))
		if !r.Artifact.Digest.IsZero() {
			fmt.Fprintf(w, " sha256=%s", r.Artifact.Digest)
		}
	}
	fmt.Fprintf(w, " ms=%.1f hash=%s\n", float64(r.End-r.Start)/1e6, s.Hash)
}

func attestPubkey(args []string) int {
	fs := attestFlags("pubkey")
	stateDir := fs.String("state-dir", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, err := attestParse(fs, args)
	if err != nil {
		return attestFail("pubkey", err)
	}
	if *stateDir == "" || len(pos) != 0 {
		return attestFail("pubkey", errors.New("usage: stockade attest pubkey --state-dir DIR [--json]"))
	}
	k, err := attest.LoadKey(filepath.Join(*stateDir, attest.KeyFileName))
	if err != nil {
		return attestFail("pubkey", err)
	}
	if *asJSON {
		printJSON(map[string]string{"public_key": attest.FormatPublicKey(k.Public()), "key_id": k.ID()})
		return 0
	}
	fmt.Println(attest.FormatPublicKey(k.Public()))
	return 0
}
