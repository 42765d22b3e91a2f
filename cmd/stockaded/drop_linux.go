package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/privdrop"
)

// dropCommand is the name of the trampoline: `stockaded drop --uid U --gid G
// [--groups G1,G2] --keep N -- PROGRAM ARGS...`. The supervisor (root) starts
// every role through it, so no line of a role runs as root: it drops to the
// identity for good, re-arms the parent-death signal the uid change cleared,
// and execs PROGRAM with an empty environment and descriptors 0..N only.
// Only the supervisor starts it; it reads nothing but its argv.
const dropCommand = "drop"

func runDrop(args []string) int {
	fs := flag.NewFlagSet(dropCommand, flag.ContinueOnError)
	uid := fs.Uint("uid", 0, "uid")
	gid := fs.Uint("gid", 0, "gid")
	groups := fs.String("groups", "", "supplementary gids, comma-separated")
	keep := fs.Int("keep", 2, "highest descriptor to hand on")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 || *keep < 2 {
		fmt.Fprintln(os.Stderr, "stockaded drop: started by stockaded only")
		return 2
	}
	if os.Getuid() != 0 {
		fmt.Fprintln(os.Stderr, "stockaded drop: not root")
		return 2
	}
	id := privdrop.Identity{UID: uint32(*uid), GID: uint32(*gid)}
	if *groups != "" {
		for g := range strings.SplitSeq(*groups, ",") {
			v, err := strconv.ParseUint(g, 10, 32)
			if err != nil {
				fmt.Fprintln(os.Stderr, "stockaded drop: bad --groups")
				return 2
			}
			id.Groups = append(id.Groups, uint32(v))
		}
	}
	parent := os.Getppid()
	if err := privdrop.Drop(id, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "stockaded drop:", err)
		return 1
	}
	// The uid change cleared the parent-death signal: set it again on this
	// (locked) thread, then make sure the supervisor did not die meanwhile.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil || os.Getppid() != parent {
		return 1
	}
	prog := fs.Arg(0)
	err := unix.Exec(prog, fs.Args(), []string{})
	fmt.Fprintln(os.Stderr, "stockaded drop: exec", prog+":", err)
	return 1
}
