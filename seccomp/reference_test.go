package seccomp

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// referenceDecide is what a profile's rule table says about a system call,
// written as plainly as possible, with none of the compiler's machinery:
// the differential tests hold every compiled program to it.
func referenceDecide(p *Profile, arch Arch, d Data) Action {
	info := arches[arch]
	if d.Arch != info.audit {
		return ActKillProcess // another architecture or ABI
	}
	nr := uint32(d.Nr)
	if info.x32Bit != 0 && nr >= info.x32Bit {
		return ActKillProcess // x32, or a number no native call has
	}
	name, ok := info.numbers[int(nr)]
	if !ok {
		return p.Default
	}
	for _, r := range p.Rules {
		if r.Syscall != name || (r.Arch != "" && r.Arch != arch) {
			continue
		}
		holds := true
		for _, c := range r.When {
			holds = holds && c.Holds(d.Args)
		}
		if holds {
			return r.Action
		}
	}
	return p.Default
}

// profileCase is one system call and the action a named profile must give it.
type profileCase struct {
	profile string
	arch    Arch // "" for both
	syscall string
	args    [6]uint64
	want    Action
}

func (c profileCase) String() string {
	return fmt.Sprintf("%s/%s/%s%x", c.profile, c.arch, c.syscall, c.args[:2])
}

const highBits = 0xdead_beef_0000_0000

// Arguments of the file calls' cases.
const (
	atFDCWD = 0xffffff9c // AT_FDCWD, -100 as an int
	sIFREG  = 0o100000
	sIFIFO  = 0o010000
)

// profileCases is the table the profile tests check, and that seeds the fuzz
// targets and the benchmarks.
var profileCases = []profileCase{
	// executor: ordinary calls run, escapes get EPERM.
	{profile: "executor", syscall: "read", want: ActAllow},
	{profile: "executor", syscall: "getpid", want: ActAllow},
	{profile: "executor", syscall: "execve", want: ActAllow},
	{profile: "executor", syscall: "ptrace", want: ActEPERM},
	{profile: "executor", syscall: "process_vm_writev", want: ActEPERM},
	{profile: "executor", syscall: "mount", want: ActEPERM},
	{profile: "executor", syscall: "fsopen", want: ActEPERM},
	{profile: "executor", syscall: "pivot_root", want: ActEPERM},
	{profile: "executor", syscall: "kexec_file_load", want: ActEPERM},
	{profile: "executor", syscall: "bpf", want: ActEPERM},
	{profile: "executor", syscall: "keyctl", want: ActEPERM},
	{profile: "executor", syscall: "io_uring_setup", want: ActEPERM},
	{profile: "executor", syscall: "open_by_handle_at", want: ActEPERM},
	{profile: "executor", syscall: "setns", want: ActEPERM},
	{profile: "executor", arch: AMD64, syscall: "iopl", want: ActEPERM},
	{profile: "executor", arch: AMD64, syscall: "arch_prctl", want: ActAllow},
	{profile: "executor", syscall: "clone3", want: ActENOSYS},
	{profile: "executor", syscall: "clone", args: [6]uint64{0x01200011}, want: ActAllow}, // fork: SIGCHLD|CLONE_CHILD_SETTID|CLEARTID
	{profile: "executor", syscall: "clone", args: [6]uint64{0x003d0f00}, want: ActAllow}, // pthread_create
	{profile: "executor", syscall: "clone", args: [6]uint64{cloneNewUser | 17}, want: ActEPERM},
	{profile: "executor", syscall: "clone", args: [6]uint64{cloneNewNet | highBits}, want: ActEPERM},
	{profile: "executor", syscall: "unshare", args: [6]uint64{cloneNewUser}, want: ActEPERM},
	{profile: "executor", syscall: "unshare", args: [6]uint64{cloneNewTime}, want: ActEPERM},
	{profile: "executor", syscall: "unshare", args: [6]uint64{0x400}, want: ActAllow}, // CLONE_FILES
	{profile: "executor", syscall: "ioctl", args: [6]uint64{0, tiocsti}, want: ActEPERM},
	{profile: "executor", syscall: "ioctl", args: [6]uint64{0, tiocsti | highBits}, want: ActEPERM},
	{profile: "executor", syscall: "ioctl", args: [6]uint64{0, tioclinux}, want: ActEPERM},
	{profile: "executor", syscall: "ioctl", args: [6]uint64{0, tcgets}, want: ActAllow},
	{profile: "executor", syscall: "ioctl", args: [6]uint64{0, tiocsti + 1}, want: ActAllow},
	{profile: "executor", syscall: "personality", args: [6]uint64{addrNoRandomize}, want: ActEPERM},
	{profile: "executor", syscall: "personality", args: [6]uint64{readImpliesExec | 8}, want: ActEPERM},
	{profile: "executor", syscall: "personality", args: [6]uint64{personalityGet}, want: ActAllow},
	{profile: "executor", syscall: "personality", args: [6]uint64{0}, want: ActAllow},
	{profile: "executor", syscall: "socket", args: [6]uint64{afInet}, want: ActAllow},
	{profile: "executor", syscall: "socket", args: [6]uint64{afInet6 | highBits}, want: ActAllow},
	{profile: "executor", syscall: "socket", args: [6]uint64{17}, want: ActEPERM}, // AF_PACKET
	{profile: "executor", syscall: "socket", args: [6]uint64{38}, want: ActEPERM}, // AF_ALG
	{profile: "executor", syscall: "socketpair", args: [6]uint64{afInet}, want: ActAllow},
	// No setuid or setgid file: by mode change or at creation.
	{profile: "executor", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o4755}, want: ActEPERM},
	{profile: "executor", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o2755}, want: ActEPERM},
	{profile: "executor", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o4000 | highBits}, want: ActEPERM},
	{profile: "executor", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o755}, want: ActAllow},
	{profile: "executor", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o1777}, want: ActAllow}, // sticky is fine
	{profile: "executor", syscall: "fchmod", args: [6]uint64{3, 0o4755}, want: ActEPERM},
	{profile: "executor", syscall: "fchmod", args: [6]uint64{3, 0o644}, want: ActAllow},
	{profile: "executor", syscall: "fchmodat2", args: [6]uint64{atFDCWD, 0, 0o2711, 0}, want: ActEPERM},
	{profile: "executor", syscall: "fchmodat2", args: [6]uint64{atFDCWD, 0, 0o711, 0}, want: ActAllow},
	{profile: "executor", syscall: "openat", args: [6]uint64{atFDCWD, 0, oCreat | 1, 0o4755}, want: ActEPERM},
	{profile: "executor", syscall: "openat", args: [6]uint64{atFDCWD, 0, oTmpfile | 0o200000 | 2, 0o6755}, want: ActEPERM}, // O_TMPFILE
	{profile: "executor", syscall: "openat", args: [6]uint64{atFDCWD, 0, oCreat | 1, 0o755}, want: ActAllow},
	{profile: "executor", syscall: "openat", args: [6]uint64{atFDCWD, 0, 2, 0o4755}, want: ActAllow}, // no O_CREAT: the mode is ignored
	{profile: "executor", syscall: "openat2", want: ActENOSYS},
	{profile: "executor", syscall: "mknodat", args: [6]uint64{atFDCWD, 0, sIFREG | 0o4755}, want: ActEPERM},
	{profile: "executor", syscall: "mknodat", args: [6]uint64{atFDCWD, 0, sIFIFO | 0o644}, want: ActAllow},
	{profile: "executor", arch: AMD64, syscall: "chmod", args: [6]uint64{0, 0o4755}, want: ActEPERM},
	{profile: "executor", arch: AMD64, syscall: "chmod", args: [6]uint64{0, 0o755}, want: ActAllow},
	{profile: "executor", arch: AMD64, syscall: "creat", args: [6]uint64{0, 0o2755}, want: ActEPERM},
	{profile: "executor", arch: AMD64, syscall: "creat", args: [6]uint64{0, 0o644}, want: ActAllow},
	{profile: "executor", arch: AMD64, syscall: "open", args: [6]uint64{0, oCreat | 1, 0o4755}, want: ActEPERM},
	{profile: "executor", arch: AMD64, syscall: "open", args: [6]uint64{0, 0, 0o4755}, want: ActAllow},
	{profile: "executor", arch: AMD64, syscall: "mknod", args: [6]uint64{0, sIFREG | 0o2755}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o4755}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "openat", args: [6]uint64{atFDCWD, 0, oCreat, 0o4755}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "openat2", want: ActENOSYS},
	{profile: "executor-sealed", syscall: "fchmod", args: [6]uint64{3, 0o2755}, want: ActEPERM},
	{profile: "executor-sealed", syscall: "openat", args: [6]uint64{atFDCWD, 0, oCreat, 0o4755}, want: ActEPERM},
	{profile: "executor-sealed", syscall: "openat2", want: ActENOSYS},
	{profile: "executor-sealed-nonet", syscall: "fchmodat", args: [6]uint64{atFDCWD, 0, 0o6755}, want: ActEPERM},
	{profile: "executor-sealed-nonet", syscall: "mknodat", args: [6]uint64{atFDCWD, 0, sIFREG | 0o4755}, want: ActEPERM},
	{profile: "executor-sealed-nonet", syscall: "openat2", want: ActENOSYS},

	// executor-nonet: the same, and Unix sockets only.
	{profile: "executor-nonet", syscall: "ptrace", want: ActEPERM},
	{profile: "executor-nonet", syscall: "socket", args: [6]uint64{afUnix}, want: ActAllow},
	{profile: "executor-nonet", syscall: "socket", args: [6]uint64{afInet}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "socket", args: [6]uint64{afInet6}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "socket", args: [6]uint64{afNetlink}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "socket", args: [6]uint64{afUnix | highBits}, want: ActAllow},
	{profile: "executor-nonet", syscall: "socket", args: [6]uint64{1<<32 | afInet}, want: ActEPERM},
	{profile: "executor-nonet", syscall: "socketpair", args: [6]uint64{afUnix}, want: ActAllow},
	{profile: "executor-nonet", syscall: "socketpair", args: [6]uint64{afInet}, want: ActEPERM},

	// broker: an allow-list; anything else kills.
	{profile: "broker", syscall: "read", want: ActAllow},
	{profile: "broker", syscall: "epoll_pwait", want: ActAllow},
	{profile: "broker", syscall: "recvmsg", want: ActAllow},
	{profile: "broker", syscall: "futex", want: ActAllow},
	{profile: "broker", syscall: "clone", args: [6]uint64{0x50f00}, want: ActAllow}, // the Go runtime's thread flags
	{profile: "broker", syscall: "clone", args: [6]uint64{0x01200011}, want: ActKillProcess},
	{profile: "broker", syscall: "clone", args: [6]uint64{0x50f00 | cloneNewUser}, want: ActKillProcess},
	{profile: "broker", syscall: "clone3", want: ActENOSYS},
	{profile: "broker", syscall: "execve", want: ActKillProcess},
	{profile: "broker", syscall: "ptrace", want: ActKillProcess},
	{profile: "broker", syscall: "socket", args: [6]uint64{afUnix}, want: ActAllow},
	{profile: "broker", syscall: "socket", args: [6]uint64{afInet6}, want: ActAllow},
	{profile: "broker", syscall: "socket", args: [6]uint64{afNetlink}, want: ActKillProcess},
	{profile: "broker", syscall: "ioctl", args: [6]uint64{0, fioclex}, want: ActAllow},
	{profile: "broker", syscall: "ioctl", args: [6]uint64{0, tiocsti}, want: ActErrno(ENOTTY)},
	{profile: "broker", syscall: "prctl", args: [6]uint64{prSetVMA}, want: ActAllow},
	{profile: "broker", syscall: "prctl", args: [6]uint64{4}, want: ActKillProcess}, // PR_SET_DUMPABLE
	{profile: "broker", syscall: "kill", args: [6]uint64{1234, 15}, want: ActAllow},
	{profile: "broker", syscall: "kill", args: [6]uint64{0, 15}, want: ActKillProcess},
	{profile: "broker", syscall: "kill", args: [6]uint64{0xffffffff, 9}, want: ActKillProcess}, // kill(-1): every process
	{profile: "broker", syscall: "prlimit64", args: [6]uint64{0, 7}, want: ActAllow},
	{profile: "broker", syscall: "prlimit64", args: [6]uint64{1, 7}, want: ActKillProcess},
	{profile: "broker", arch: AMD64, syscall: "open", want: ActKillProcess},

	// verifier: the same, but no socket of any family and no connect.
	{profile: "verifier", syscall: "openat", want: ActAllow},
	{profile: "verifier", syscall: "accept4", want: ActAllow},
	{profile: "verifier", syscall: "socket", args: [6]uint64{afUnix}, want: ActKillProcess},
	{profile: "verifier", syscall: "connect", want: ActKillProcess},
	{profile: "broker", syscall: "connect", want: ActAllow},
	{profile: "verifier", syscall: "socket", args: [6]uint64{afInet}, want: ActKillProcess},
	{profile: "verifier", syscall: "execveat", want: ActKillProcess},
	{profile: "verifier", syscall: "memfd_create", want: ActAllow},
}

func namedProgram(t testing.TB, name string, arch Arch) (*Profile, *Program) {
	t.Helper()
	p, err := Named(name)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := p.Compile(arch)
	if err != nil {
		t.Fatal(err)
	}
	return p, prog
}

// interestingArgs returns argument vectors around every condition of p:
// the compared value, one bit off, the value with high bits set, all ones.
func interestingArgs(p *Profile) [][6]uint64 {
	out := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}}
	for _, r := range p.Rules {
		for _, c := range r.When {
			low := c.Mask & -c.Mask
			for _, v := range []uint64{c.Value, c.Value ^ low, c.Value | highBits, c.Mask, c.Value ^ c.Mask} {
				var a [6]uint64
				a[c.Arg] = v
				out = append(out, a)
				// and with every condition of the rule met
				for _, o := range r.When {
					if o.Arg != c.Arg {
						a[o.Arg] = o.Value
					}
				}
				out = append(out, a)
			}
		}
	}
	return out
}

// randomProfile makes a valid profile of n rules over arch's system calls,
// with random conditions and actions, for the differential tests of the
// compiler itself.
func randomProfile(r *rand.Rand, arch Arch, n int) *Profile {
	names := SyscallNames(arch)
	actions := []Action{ActAllow, ActEPERM, ActENOSYS, ActErrno(uint16(r.IntN(maxErrno + 1))), ActKillProcess, ActKillThread, ActTrap, ActLog}
	p := &Profile{Name: "random", Default: actions[r.IntN(len(actions))]}
	decided := map[string]bool{} // system calls with an unconditional rule
	for range n {
		name := names[r.IntN(len(names))]
		if decided[name] {
			continue
		}
		rule := Rule{Syscall: name, Action: actions[r.IntN(len(actions))], Why: "random"}
		for range r.IntN(4) {
			rule.When = append(rule.When, randomCond(r))
		}
		if len(rule.When) == 0 && r.IntN(2) == 0 {
			decided[name] = true
		} else if len(rule.When) == 0 {
			rule.When = append(rule.When, randomCond(r))
		}
		p.Rules = append(p.Rules, rule)
	}
	return p
}

func randomCond(r *rand.Rand) Cond {
	var mask uint64
	switch r.IntN(5) {
	case 0:
		mask = 0xffffffff
	case 1:
		mask = ^uint64(0)
	case 2:
		mask = 1 << r.IntN(64)
	case 3:
		mask = 0xffffffff_00000000
	default:
		mask = r.Uint64() | 1<<r.IntN(64)
	}
	value := r.Uint64() & mask
	if r.IntN(3) == 0 {
		value = 0
	}
	op := OpEqual
	if r.IntN(2) == 0 {
		op = OpNotEqual
	}
	arg := r.IntN(6)
	if r.IntN(2) == 0 {
		arg = r.IntN(2) // conditions often share an argument
	}
	return Cond{Arg: arg, Op: op, Mask: mask, Value: value}
}

// randomArgs draws arguments that often meet the profile's conditions.
func randomArgs(r *rand.Rand, p *Profile, name string) [6]uint64 {
	var a [6]uint64
	for i := range a {
		a[i] = r.Uint64()
	}
	var conds []Cond
	for _, rule := range p.Rules {
		if rule.Syscall == name {
			conds = append(conds, rule.When...)
		}
	}
	for _, c := range conds {
		if r.IntN(2) == 0 {
			a[c.Arg] = a[c.Arg]&^c.Mask | c.Value
		}
	}
	return a
}

// checkAgainstReference runs prog on d and compares with the table.
func checkAgainstReference(t testing.TB, p *Profile, prog *Program, d Data) {
	t.Helper()
	got, err := prog.Run(d)
	if err != nil {
		t.Fatalf("%s/%s: Run(%+v): %v", p.Name, prog.Arch(), d, err)
	}
	if want := referenceDecide(p, prog.Arch(), d); got != want {
		name, _ := SyscallName(prog.Arch(), int(uint32(d.Nr)))
		t.Fatalf("%s/%s: nr %d (%s) args %#x arch %#x: program says %v, table says %v",
			p.Name, prog.Arch(), d.Nr, name, d.Args, d.Arch, got, want)
	}
}

func auditArches() []uint32 {
	out := []uint32{0x40000003, 0x40000028, 0} // i386, ARM (AArch32), nothing
	for _, a := range Arches() {
		out = append(out, arches[a].audit)
	}
	return slices.Clip(out)
}
