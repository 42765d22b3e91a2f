package seccomp

// The daemon profiles: the broker and the verifier install them on
// themselves once start-up is over (config read, keys loaded, sockets
// bound and listening). They are allow-lists of what a Go program serving
// Unix sockets and keeping files in a state directory does.
//
// The default is to kill the process (SECCOMP_RET_KILL_PROCESS). An errno,
// EPERM or ENOSYS, would let a compromised daemon probe the kernel quietly,
// and let a daemon bug take a fallback path nobody reviewed. A kill is
// loud: the supervisor sees the daemon die of SIGSYS, logs it and restarts
// it, and the audit log (or dmesg) names the system call. The price is that
// the lists must cover everything the Go runtime does after start-up; the
// tests run a daemon-like Go program under each profile to keep them honest.
//
// Where a call is allowed only with some arguments, the others get the
// default too, except ioctl, which answers ENOTTY ("not a terminal"), the
// reply every caller of an unknown ioctl is ready for. clone3 answers
// ENOSYS, as in the executor profiles: its flags cannot be checked, and libc
// falls back to clone, whose flags are.

const (
	prSetVMA         = 0x53564d41 // PR_SET_VMA: Go names its anonymous mappings
	fioclex          = 0x5451
	fionclex         = 0x5450
	fionbio          = 0x5421
	fionread         = 0x541b
	tcgets           = 0x5401
	tiocgwinsz       = 0x5413
	clonePlainThread = cloneThread | cloneVM
)

func daemonProfile(name string, rules []Rule) *Profile {
	return &Profile{Name: name, Default: ActKillProcess, Rules: rules}
}

// allow makes unconditional allow rules.
func allow(names ...string) []Rule {
	rules := make([]Rule, len(names))
	for i, n := range names {
		rules[i] = Rule{Syscall: n, Action: ActAllow}
	}
	return rules
}

// goDaemonRules is what every Go daemon of the project needs.
func goDaemonRules() []Rule {
	var r []Rule
	// The Go runtime: memory, threads, scheduling, signals, time.
	r = append(r, allow(
		"mmap", "munmap", "mprotect", "madvise", "mremap",
		"futex", "sched_yield", "sched_getaffinity", "nanosleep", "clock_nanosleep",
		"gettid", "getpid", "getppid", "tgkill",
		"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
		"restart_syscall", // the kernel resumes an interrupted sleep through it
		// glibc registers every new thread (when cgo is linked, as in
		// tests; the shipped daemons are built without it).
		"rseq", "set_robust_list",
		"clock_gettime", "clock_getres", "gettimeofday",
		"getrandom",
		"exit", "exit_group",
	)...)
	r = append(r,
		// Threads, never processes: a thread shares the address space.
		Rule{Syscall: "clone", Action: ActAllow,
			When: []Cond{Arg32MaskedEqual(0, clonePlainThread|cloneNewSpace, clonePlainThread)}},
		Rule{Syscall: "clone3", Action: ActENOSYS,
			Why: "flags the filter cannot read; the Go runtime makes threads with clone"},
		// The runtime re-raises fatal signals with kill(getpid(), sig);
		// a pid of 0 or below would reach a whole process group.
		Rule{Syscall: "kill", Action: ActAllow,
			When: []Cond{Arg32AnySet(0, 0x7fffffff), Arg32MaskedEqual(0, 0x80000000, 0)}},
		Rule{Syscall: "prctl", Action: ActAllow, When: []Cond{Arg32Equal(0, prSetVMA)}},
		// Limits of this process only (os raises RLIMIT_NOFILE).
		Rule{Syscall: "prlimit64", Action: ActAllow, When: []Cond{Arg32Equal(0, 0)}},
	)
	// Files in the state directory, and what io.Copy uses between files and sockets.
	r = append(r, allow(
		"openat", "openat2", "close", "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek",
		"fstat", "newfstatat", "statx", "fstatfs", "getdents64", "faccessat", "faccessat2", "readlinkat",
		"mkdirat", "unlinkat", "renameat", "renameat2", "linkat", "symlinkat",
		"fchmod", "fchmodat", "fchown", "fchownat", "utimensat", "ftruncate", "fallocate",
		"fsync", "fdatasync", "flock", "fcntl", "dup", "dup3", "pipe2",
		"copy_file_range", "sendfile", "splice",
		"memfd_create", // sealed in-memory files to hand over module bytes
		"getcwd", "umask", "uname", "getrusage",
		"getuid", "geteuid", "getgid", "getegid", "getgroups",
		// Is a peer pinned by its SO_PEERPIDFD still alive? (poll the pidfd)
		"ppoll",
	)...)
	r = append(r, Rule{Syscall: "poll", Arch: AMD64, Action: ActAllow})
	// The network poller and Unix sockets; SCM_RIGHTS rides on sendmsg/recvmsg.
	r = append(r, allow(
		"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "eventfd2",
		"accept4", "shutdown",
		"getsockname", "getpeername", "getsockopt", "setsockopt",
		"sendmsg", "recvmsg", "sendto", "recvfrom",
	)...)
	for _, req := range []uint32{fioclex, fionclex, fionbio, fionread, tcgets, tiocgwinsz} {
		r = append(r, Rule{Syscall: "ioctl", Action: ActAllow, When: []Cond{Arg32Equal(1, req)}})
	}
	r = append(r, Rule{Syscall: "ioctl", Action: ActErrno(ENOTTY),
		Why: "ioctl reaches every driver; a daemon needs the few above, and ENOTTY is the reply callers expect"})
	return r
}

// brokerRules: the broker serves agents on agent.sock, talks to the
// verifier, the supervisor and executors over inherited socketpairs,
// receives executor descriptors over SCM_RIGHTS, writes attestations, and
// performs the HTTP requests of skills' egress grants (TCP and DNS over
// IPv4 and IPv6). It starts no process.
func brokerRules() []Rule {
	r := append(goDaemonRules(), allow("connect")...)
	for _, family := range []uint32{afUnix, afInet, afInet6} {
		r = append(r, Rule{Syscall: "socket", Action: ActAllow, When: []Cond{Arg32Equal(0, family)}})
	}
	return r
}

// verifierRules: the verifier serves admin.sock (accepting on the listener
// it inherits) and the broker (over an inherited socketpair), and keeps the
// trust store and skills on disk. It creates no socket of any family and
// connects to nothing, and starts no process.
func verifierRules() []Rule {
	return goDaemonRules()
}
