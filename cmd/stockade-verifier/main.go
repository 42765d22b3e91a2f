// Command stockade-verifier is the verifier role (`serve`, started by
// stockaded with admin.sock's listener as fd 3 and its handoff channel as
// fd 4) and the admin CLI: offline commands that build, sign, verify and
// audit skill archives, and commands that drive the running verifier over
// admin.sock.
//
//	stockade-verifier keygen [--out FILE] [--unencrypted]
//	stockade-verifier package build DIR --key FILE [--out DIR]
//	stockade-verifier package verify X.skill [--sig FILE]
//	stockade-verifier audit X.skill [--sig FILE]
//	stockade-verifier trust rotate --old FILE --new FILE [--skill ID ...] --out FILE
//	stockade-verifier [--socket PATH] status | install X.skill [--sig FILE] | list |
//	    show ID | promote ID@VERSION --digest D | disable ID | enable ID |
//	    remove ID@VERSION [--digest D] | revoke key FP | revoke skill ID@DIGEST |
//	    trust list | trust import-rotation FILE | doctor
//
// Every command takes --json. Exit codes are in exitcode.go and
// docs/SKILLS.md ("The admin CLI"); the socket is --socket, then
// $STOCKADE_ADMIN_SOCKET, then the default path (socket.go).
//
// # Security
//
// The CLI runs as an admin or a publisher and holds, at most, a publisher
// signing key. What it reads and how far it believes it:
//
//   - Archives and signatures are anyone's: package verify and audit run
//     them through skill.Open (signature and archive hash before the ZIP
//     is parsed) and say nothing about trust; install hands them to the
//     verifier as descriptors, unread, after checking they are regular
//     files (a FIFO or a device would stall or flood the verifier).
//   - The verifier's replies are decoded strictly by verifier/admin. They
//     carry names from skills: every value printed in human output goes
//     through clean (escape.go, over internal/termesc), and the JSON
//     encoder escapes control characters, so no skill can forge a line or
//     drive the terminal.
//   - Key files must be regular, mode 0600 or stricter, and parse exactly;
//     an encrypted one opens only with its passphrase (AES-256-GCM over a
//     PBKDF2 key, the header bound as additional data), and its public key
//     must be the seed's. Keys are created O_EXCL and never overwritten.
//   - Passphrases come from $STOCKADE_KEY_PASSPHRASE or the controlling
//     terminal with echo off, never from stdin.
//
// The verifier decides; the CLI's own checks of ids, versions, digests and
// fingerprints only turn typos into usage errors before a request is sent.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "stockade-verifier:", err)
			os.Exit(1)
		}
		return
	}
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv}
	os.Exit(c.run(os.Args[1:]))
}

// command is one admin command.
type command struct {
	name     string // one or two words
	synopsis string
	summary  string
	run      func(c *cli, args []string) (*report, error)
}

var commands []command

func init() {
	commands = []command{
		{"keygen", "[--out FILE] [--unencrypted]", "make a publisher signing key (encrypted unless --unencrypted)", cmdKeygen},
		{"package build", "DIR --key FILE [--out DIR]", "build and sign DIR into <id>-<version>.skill and .skill.sig", cmdPackageBuild},
		{"package verify", "X.skill [--sig FILE]", "check an archive and its signature (no trust store)", cmdPackageVerify},
		{"audit", "X.skill [--sig FILE]", "verify, then audit every module", cmdAudit},
		{"trust rotate", "--old FILE --new FILE [--skill ID ...] --out FILE", "write a key rotation statement signed by both keys", cmdTrustRotate},
		{"status", "", "the running verifier's status", cmdStatus},
		{"install", "X.skill [--sig FILE]", "install a skill (active, or quarantined with reasons)", cmdInstall},
		{"list", "", "every release the verifier holds", cmdList},
		{"show", "ID", "everything the verifier holds about one skill", cmdShow},
		{"promote", "ID@VERSION --digest D", "make a release active (the exact digest reviewed)", cmdPromote},
		{"disable", "ID", "stop a skill's active release from running", cmdDisable},
		{"enable", "ID", "let a disabled release run again", cmdEnable},
		{"remove", "ID@VERSION [--digest D]", "remove a quarantined or superseded release", cmdRemove},
		{"revoke key", "FINGERPRINT", "revoke a publisher key, for good", cmdRevokeKey},
		{"revoke skill", "ID@DIGEST", "revoke one release, for good", cmdRevokeSkill},
		{"trust list", "", "the publisher keys the verifier knows", cmdTrustList},
		{"trust import-rotation", "FILE", "move a key's skills to a new key (rotation statement)", cmdTrustImportRotation},
		{"doctor", "", "re-hash installed skills, check the store and the audit chain", cmdDoctor},
	}
}

// findCommand returns the command named name.
func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: stockade-verifier [--socket PATH] [--json] COMMAND ...\n\ncommands:\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "  %s\n      %s\n", strings.TrimSpace(cmd.name+" "+cmd.synopsis), cmd.summary)
	}
	b.WriteString("\nexit codes:\n")
	for o := outOK; o <= outInternal; o++ {
		fmt.Fprintf(&b, "  %2d %s\n", o.code(), o)
	}
	return b.String()
}

// run parses the global flags, finds the command and runs it.
func (c *cli) run(args []string) int {
	fs := c.flags(true)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, usage())
			return 0
		}
		return c.finish(nil, usagef(err.Error()))
	}
	args = fs.Args()
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage())
		return c.finish(nil, usagef("no command given"))
	}
	if args[0] == "help" {
		fmt.Fprint(c.stdout, usage())
		return 0
	}
	var cmd *command
	if len(args) > 1 {
		cmd = findCommand(args[0] + " " + args[1])
	}
	n := 2
	if cmd == nil {
		cmd, n = findCommand(args[0]), 1
	}
	if cmd == nil {
		return c.finish(nil, usagef(fmt.Sprintf("unknown command %q (see stockade-verifier help)", strings.Join(args[:min(2, len(args))], " "))))
	}
	c.command = cmd.name
	rep, err := cmd.run(c, args[n:])
	if errors.Is(err, errHelp) {
		fmt.Fprintf(c.stdout, "usage: stockade-verifier %s\n    %s\n", strings.TrimSpace(cmd.name+" "+cmd.synopsis), cmd.summary)
		return 0
	}
	return c.finish(rep, err)
}
