// Command wasm-table-max is the post-link step of the Go SDK's skills
// (sdk.mk): it gives every table of a WebAssembly module that declares no
// maximum a maximum equal to its minimum, and changes nothing else.
//
// Go's linker writes the module's function table with a minimum (the
// number of functions whose address is taken) and no maximum
// (cmd/link/internal/wasm, writeTableSec), but the verifier's audit
// refuses a table without a maximum, since wazero bounds table.grow only
// by it. Go never grows its table (it emits no table.grow), so the
// minimum is also the most it ever holds.
//
//	wasm-table-max -o out.wasm in.wasm
//
// The output is a function of the input alone: the same module always
// gives the same bytes, so a skill built with it stays reproducible.
//
// # Security
//
// Who sends it bytes: the local Go toolchain, through the file named on
// the command line; the module is trusted no further than that. It walks
// every section's frame with bounds checks and decodes the table section
// fully, and refuses (exit status 1, output not written) anything it does
// not understand rather than guess: an unknown or repeated section, an
// over-long LEB128, a table type other than funcref or externref with
// 32-bit limits, trailing bytes. It does not validate the rest of the
// module: the verifier's audit and wazero do that at install.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxModuleBytes bounds the input read into memory: far above any skill
// the audit admits (8 MiB), and above any Go module seen so far.
const maxModuleBytes = 256 << 20

func main() {
	out := flag.String("o", "", "write the module here (required; may be the input)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: wasm-table-max -o out.wasm in.wasm")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "wasm-table-max:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	module, err := readModule(in)
	if err != nil {
		return err
	}
	rewritten, _, err := setTableMax(module)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return writeFile(out, rewritten)
}

func readModule(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxModuleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxModuleBytes {
		return nil, fmt.Errorf("%s: over %d bytes", name, maxModuleBytes)
	}
	return b, nil
}

// writeFile replaces name with b through a temporary file in the same
// directory, so that a failure never leaves a half-written module.
func writeFile(name string, b []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err = errors.Join(werr, serr, cerr); err != nil {
		return err
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}
