package seccomp

// The executor profiles: installed on (or handed to bubblewrap for) the
// target of a native tool call. A target may be any program (a shell, a
// compiler, a Python script), so these are deny-lists: allow by default, and
// refuse with EPERM what a sandboxed program never needs and what escapes
// and kernel exploits use. EPERM reads to a program as "not permitted
// here", which it handles; the few exceptions are commented.
//
// Each denial below says why. Several of them the kernel already refuses to
// an unprivileged uid; they are denied here as well because in single-user
// mode the target may run with the user's own privileges, and because a
// filter also holds when a kernel bug lets a capability check be skipped.

// Linux constants the rules use (the same on amd64 and arm64).
const (
	cloneVM       = 0x00000100
	cloneThread   = 0x00010000
	cloneNewNS    = 0x00020000
	cloneNewCgrp  = 0x02000000
	cloneNewUTS   = 0x04000000
	cloneNewIPC   = 0x08000000
	cloneNewUser  = 0x10000000
	cloneNewPID   = 0x20000000
	cloneNewNet   = 0x40000000
	cloneNewTime  = 0x00000080 // unshare and clone3 only: in clone's flags these bits are the exit signal
	cloneNewSpace = cloneNewNS | cloneNewCgrp | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16

	tiocsti   = 0x5412
	tioclinux = 0x541c
	tiocsetd  = 0x5423

	addrNoRandomize = 0x0040000
	mmapPageZero    = 0x0100000
	readImpliesExec = 0x0400000
	personalityGet  = 0xffffffff // personality(0xffffffff) only reads the persona

	setIDBits = 0o6000     // S_ISUID | S_ISGID
	oCreat    = 0o100      // O_CREAT
	oTmpfile  = 0o20000000 // __O_TMPFILE, the bit of O_TMPFILE that is not O_DIRECTORY
)

func executorProfile(name string, noNetwork, sealed bool) *Profile {
	p := &Profile{Name: name, Default: ActAllow}
	deny := func(why string, names ...string) {
		for _, n := range names {
			p.Rules = append(p.Rules, Rule{Syscall: n, Action: ActEPERM, Why: why})
		}
	}
	denyOn := func(arch Arch, why string, names ...string) {
		for _, n := range names {
			p.Rules = append(p.Rules, Rule{Syscall: n, Arch: arch, Action: ActEPERM, Why: why})
		}
	}
	denyIf := func(name, why string, when ...Cond) {
		p.Rules = append(p.Rules, Rule{Syscall: name, When: when, Action: ActEPERM, Why: why})
	}

	// Other processes.
	deny("reads and writes other processes' memory and registers: the classic escape", "ptrace")
	deny("read or write another process's memory directly", "process_vm_readv", "process_vm_writev")
	deny("copies a file descriptor out of another process", "pidfd_getfd")
	deny("compares kernel objects across processes: an information leak used to aim exploits", "kcmp")
	deny("advises on another process's memory", "process_madvise")
	deny("move pages of other processes between NUMA nodes", "migrate_pages", "move_pages")

	// The kernel itself.
	deny("loads a new kernel", "kexec_load", "kexec_file_load")
	deny("loads and unloads kernel modules", "init_module", "finit_module", "delete_module")
	deny("reboots or halts the machine", "reboot")
	deny("swap configuration is the host's", "swapon", "swapoff")
	deny("process accounting is the host's", "acct")
	deny("disk quotas are the host's", "quotactl", "quotactl_fd")
	deny("reads the kernel log: addresses and other users' activity", "syslog")
	deny("eBPF: a large kernel attack surface, and tracing of the host", "bpf")
	deny("performance counters and kernel tracing: side channels and a frequent exploit source", "perf_event_open")
	deny("lets an exploit pause the kernel in the middle of a copy from user memory: a staple of race exploits", "userfaultfd")
	deny("sets the system clock", "settimeofday", "clock_settime")
	deny("changes the host name", "sethostname", "setdomainname")
	deny("hangs up the terminal", "vhangup")
	deny("obsolete profiling hook", "lookup_dcookie")
	denyOn(AMD64, "raw I/O port access", "iopl", "ioperm")
	denyOn(AMD64, "custom LDT segments: only 16-bit code and Wine need them, and they had several kernel bugs", "modify_ldt")
	denyOn(AMD64, "loads a.out libraries: dead code in the kernel", "uselib")

	// Mounts and namespaces: a target stays in the view it was given.
	deny("mounts change what the sandbox sees", "mount", "umount2", "pivot_root", "chroot",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr")
	deny("enters another process's namespaces", "setns")
	denyIf("unshare", "new namespaces: a user namespace grants capabilities over the others and opens their kernel code to the target",
		Arg32AnySet(0, cloneNewSpace|cloneNewTime))
	denyIf("clone", "new namespaces, as for unshare", Arg32AnySet(0, cloneNewSpace))
	p.Rules = append(p.Rules, Rule{Syscall: "clone3", Action: ActENOSYS,
		Why: "its flags are in a struct the filter cannot read; ENOSYS makes libc fall back to clone, whose flags are checked"})

	// Keys, io_uring, file handles.
	deny("the kernel keyring is shared by every process of a uid, across sandboxes", "keyctl", "add_key", "request_key")
	deny("io_uring performs its operations without this filter seeing them, and has been a major exploit source",
		"io_uring_setup", "io_uring_enter", "io_uring_register")
	deny("opens any file of a mount by handle, whatever the path: the \"shocker\" container escape", "open_by_handle_at")
	deny("the handle half of open_by_handle_at", "name_to_handle_at")

	// Terminals. ioctl's request is an unsigned int: only its low 32 bits count.
	denyIf("ioctl", "TIOCSTI pushes input into a terminal: commands typed into the caller's shell", Arg32Equal(1, tiocsti))
	denyIf("ioctl", "TIOCLINUX can paste a console selection: input injection again", Arg32Equal(1, tioclinux))
	denyIf("ioctl", "TIOCSETD loads line disciplines, several of which had local root bugs", Arg32Equal(1, tiocsetd))

	// Address space layout.
	denyIf("personality", "turning off address randomization, or making data executable, weakens every exploit mitigation",
		Arg32NotEqual(0, personalityGet), Arg32AnySet(0, addrNoRandomize|readImpliesExec|mmapPageZero))

	deny("watches every file access on a mount or filesystem, and with permission events blocks the host's", "fanotify_init")

	// Setuid and setgid files. A file a target makes setuid is its uid's
	// for anyone to run, after the call and outside any sandbox: in
	// multi-uid mode, as a pool uid a later call will hold, or as the
	// user's own uid in single-user mode. Modes are umode_t (the kernel
	// reads their low 16 bits), flags ints: both are compared on their low
	// 32 bits. A mode is used only when the call creates a file (O_CREAT,
	// or O_TMPFILE, which linkat can make visible later).
	setID := func(arch Arch, name string, when ...Cond) {
		p.Rules = append(p.Rules, Rule{Syscall: name, Arch: arch, When: when, Action: ActEPERM,
			Why: "a setuid or setgid file would let anyone run a program as the call's uid or gid, after the call"})
	}
	setID(AMD64, "chmod", Arg32AnySet(1, setIDBits))
	setID("", "fchmod", Arg32AnySet(1, setIDBits))
	setID("", "fchmodat", Arg32AnySet(2, setIDBits))
	setID("", "fchmodat2", Arg32AnySet(2, setIDBits))
	setID(AMD64, "creat", Arg32AnySet(1, setIDBits))
	setID(AMD64, "open", Arg32AnySet(1, oCreat|oTmpfile), Arg32AnySet(2, setIDBits))
	setID("", "openat", Arg32AnySet(2, oCreat|oTmpfile), Arg32AnySet(3, setIDBits))
	setID(AMD64, "mknod", Arg32AnySet(1, setIDBits))
	setID("", "mknodat", Arg32AnySet(2, setIDBits))
	p.Rules = append(p.Rules, Rule{Syscall: "openat2", Action: ActENOSYS,
		Why: "its flags and mode are in a struct the filter cannot read; ENOSYS sends callers to openat, whose are checked, as on kernels before 5.6"})

	// Sockets.
	if sealed {
		// Without a mount or IPC namespace (Tier C on Landlock alone), a
		// pathname Unix socket outside the sandbox (an SSH agent, D-Bus, a
		// container daemon) is reachable by connect(2), which Landlock below
		// ABI 9 does not cover, and SysV IPC objects are host-wide. A
		// connected pair (socketpair) stays possible.
		denyIf("socket", "no namespace hides the host's Unix sockets: socket(AF_UNIX) is refused, socketpair is not",
			Arg32Equal(0, afUnix))
		deny("SysV IPC objects are shared by the whole host without an IPC namespace",
			"shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl")
	}
	if noNetwork {
		denyIf("socket", "no network: only Unix sockets", Arg32NotEqual(0, afUnix))
		denyIf("socketpair", "no network: only Unix sockets", Arg32NotEqual(0, afUnix))
	} else {
		denyIf("socket", "families beyond Unix, IPv4, IPv6 and netlink (packet, vsock, ALG, RDS, TIPC...) are rarely used and often exploited",
			Arg32NotEqual(0, afUnix), Arg32NotEqual(0, afInet), Arg32NotEqual(0, afInet6), Arg32NotEqual(0, afNetlink))
	}
	return p
}
