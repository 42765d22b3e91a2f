// Package seccomp builds seccomp-BPF filters from rule tables, and installs
// them. It has no cgo and no libseccomp: golang.org/x/sys and the standard
// library only.
//
// A Profile is a rule table: a default action, and per system call, by
// name, actions (allow, errno, kill, log, trap) under optional conditions
// on the arguments (masked equal / not equal, e.g. socket's domain, clone's
// flags, ioctl's request). Profile.Compile turns it into a classic BPF
// Program for amd64 or arm64; Install puts a Program in force on the
// running process; Program.Bytes is the same program for
// `bwrap --seccomp FD`. Named returns the project's profiles: "executor"
// and "executor-nonet" for the targets of tool calls, "broker" and
// "verifier" for the daemons.
//
// Every compiled program starts by checking seccomp_data.arch, and kills the
// process on any other architecture or ABI: i386 system calls made with
// int 0x80 from an x86-64 process, AArch32 from arm64, and on x86-64 the
// x32 ABI (system call numbers with bit 30 set), since the rules name
// native numbers only. A binary search on the system call number follows,
// so a call costs a handful of instructions whatever the table's size.
//
// A target run under bubblewrap gets the executor program through
// `bwrap --seccomp FD` (Program.Bytes), not through Install before bwrap
// starts: the executor profiles refuse the namespace and mount calls
// bubblewrap makes itself.
//
// Program.String is a readable disassembly (golden files in
// testdata/seccomp/ hold one per profile and architecture), and
// Program.Eval runs a program in an interpreter, without installing it.
//
// # Security
//
// What is trusted: the kernel, which runs the filter; the rule tables, which
// are Go code in this package or in the caller, never read from files or
// peers; and the system call tables (zsysnum_*.go), which tests check
// against golang.org/x/sys/unix. Nothing here parses bytes from another
// process.
//
// What is checked: Compile refuses a profile it cannot compile as written
// (a system call name the architecture lacks, a condition whose value has
// bits outside its mask, a rule after one that always decides, a denial
// without a reason): a mistake is an error at build time, never a hole in
// the filter. Compiled programs pass the same checks the kernel makes
// before loading (opcodes, jump ranges, a final return). Install sets
// PR_SET_NO_NEW_PRIVS and loads the filter on all threads
// (SECCOMP_FILTER_FLAG_TSYNC), and reports any failure: a caller that gets
// an error must not go on unfiltered.
//
// What a filter cannot do: it sees system call numbers and argument
// registers, not the memory they point to. It cannot tell one path from
// another, see clone3's flags (so clone3 is refused with ENOSYS, and libc
// falls back to clone, whose flags are checked) or openat2's (the executor
// profiles refuse it with ENOSYS too, and callers fall back to openat), or
// see what io_uring does (so io_uring is refused). Arguments that are C
// ints are compared on their low 32 bits, as the kernel reads them.
// Filesystem confinement is Landlock's and bubblewrap's job; seccomp
// narrows the kernel surface.
package seccomp
