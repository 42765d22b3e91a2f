package seccomp

import (
	"fmt"
	"slices"
)

// Profile is a rule table: what a filter does with each system call.
//
// For a system call, the rules naming it are tried in order and the first
// whose conditions all hold decides; a system call no rule decides gets
// Default. Before any of that, every compiled filter kills a system call made
// under another architecture or ABI (see the package documentation).
type Profile struct {
	// Name identifies the profile in disassembly and in attestations.
	Name string
	// Default is the action for system calls no rule decides.
	Default Action
	// Rules, tried in order for each system call.
	Rules []Rule
}

// Rule decides one system call, when all its conditions hold.
type Rule struct {
	// Syscall is the kernel's name of the system call ("openat", "clone").
	Syscall string
	// Arch, when set, limits the rule to one architecture (for system calls
	// only one of them has, like amd64's "arch_prctl"). When empty, the rule
	// applies everywhere, and a name an architecture lacks fails Compile.
	Arch Arch
	// When holds the conditions on arguments; all must hold. None: always.
	When []Cond
	// Action is what the kernel does when the rule decides.
	Action Action
	// Why says what the rule is for. Every rule that does not allow needs one.
	Why string
}

// Op compares a masked argument with a value.
type Op uint8

// Comparisons: the argument is masked first (arg & Mask), then compared.
const (
	OpEqual    Op = iota + 1 // arg & Mask == Value
	OpNotEqual               // arg & Mask != Value
)

// Cond is a condition on one system call argument.
//
// Many arguments are C int or unsigned int (socket's domain, ioctl's
// request, clone's flags): the kernel reads only their low 32 bits, so their
// conditions must mask with 0xffffffff or less, as the Arg32 helpers do. A
// 64-bit comparison there would let a caller slip past an OpEqual denial by
// setting high bits the kernel then ignores.
type Cond struct {
	Arg   int // 0 to 5
	Op    Op
	Mask  uint64 // not zero
	Value uint64 // no bits outside Mask
}

// Arg32Equal holds when the low 32 bits of argument arg equal v.
func Arg32Equal(arg int, v uint32) Cond {
	return Cond{Arg: arg, Op: OpEqual, Mask: 0xffffffff, Value: uint64(v)}
}

// Arg32NotEqual holds when the low 32 bits of argument arg differ from v.
func Arg32NotEqual(arg int, v uint32) Cond {
	return Cond{Arg: arg, Op: OpNotEqual, Mask: 0xffffffff, Value: uint64(v)}
}

// Arg32MaskedEqual holds when argument arg, masked with mask, equals v.
func Arg32MaskedEqual(arg int, mask, v uint32) Cond {
	return Cond{Arg: arg, Op: OpEqual, Mask: uint64(mask), Value: uint64(v)}
}

// Arg32AnySet holds when argument arg has any of bits set.
func Arg32AnySet(arg int, bits uint32) Cond {
	return Cond{Arg: arg, Op: OpNotEqual, Mask: uint64(bits), Value: 0}
}

// ArgEqual holds when all 64 bits of argument arg equal v.
func ArgEqual(arg int, v uint64) Cond {
	return Cond{Arg: arg, Op: OpEqual, Mask: ^uint64(0), Value: v}
}

// Holds evaluates the condition on the arguments of a system call.
func (c Cond) Holds(args [6]uint64) bool {
	v := args[c.Arg] & c.Mask
	if c.Op == OpEqual {
		return v == c.Value
	}
	return v != c.Value
}

func (c Cond) String() string {
	op := "=="
	if c.Op == OpNotEqual {
		op = "!="
	}
	return fmt.Sprintf("args[%d] & %#x %s %#x", c.Arg, c.Mask, op, c.Value)
}

func (c Cond) check() error {
	switch {
	case c.Arg < 0 || c.Arg > 5:
		return fmt.Errorf("argument %d out of range 0-5", c.Arg)
	case c.Op != OpEqual && c.Op != OpNotEqual:
		return fmt.Errorf("unknown comparison %d", c.Op)
	case c.Mask == 0:
		return fmt.Errorf("%v: empty mask makes the condition constant", c)
	case c.Value&^c.Mask != 0:
		return fmt.Errorf("%v: value has bits outside the mask", c)
	}
	return nil
}

// Clone returns a deep copy of the profile.
func (p *Profile) Clone() *Profile {
	q := *p
	q.Rules = make([]Rule, len(p.Rules))
	for i, r := range p.Rules {
		r.When = slices.Clone(r.When)
		q.Rules[i] = r
	}
	return &q
}

// syscallRules is what a profile says about one system call on one
// architecture: its rules, in order.
type syscallRules struct {
	nr    int
	name  string
	rules []Rule
}

// resolve checks the profile for arch and groups its rules by system call
// number, in increasing order of number. The check is the same for every
// profile: a mistake is an error here, never a gap in the filter.
func (p *Profile) resolve(arch Arch) ([]syscallRules, error) {
	info, err := lookupArch(arch)
	if err != nil {
		return nil, err
	}
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidProfile, p.Name, fmt.Sprintf(format, args...))
	}
	if !p.Default.validForRule() {
		return nil, invalid("default action %v cannot be used", p.Default)
	}
	byNr := map[int]*syscallRules{}
	for i, r := range p.Rules {
		if r.Syscall == "" {
			return nil, invalid("rule %d names no system call", i)
		}
		if r.Arch != "" {
			if _, err := lookupArch(r.Arch); err != nil {
				return nil, invalid("rule %d (%s): %v", i, r.Syscall, err)
			}
			if r.Arch != arch {
				continue
			}
		}
		if !r.Action.validForRule() {
			return nil, invalid("rule %d (%s): action %v cannot be used", i, r.Syscall, r.Action)
		}
		if r.Action != ActAllow && r.Why == "" {
			return nil, invalid("rule %d (%s): a rule that does not allow must say why", i, r.Syscall)
		}
		for _, c := range r.When {
			if err := c.check(); err != nil {
				return nil, invalid("rule %d (%s): %v", i, r.Syscall, err)
			}
		}
		nr, ok := info.names[r.Syscall]
		if !ok {
			return nil, fmt.Errorf("%w %q: rule %d: %w: %q on %s", ErrInvalidProfile, p.Name, i, ErrUnknownSyscall, r.Syscall, arch)
		}
		sr := byNr[nr]
		if sr == nil {
			sr = &syscallRules{nr: nr, name: r.Syscall}
			byNr[nr] = sr
		}
		if n := len(sr.rules); n > 0 && len(sr.rules[n-1].When) == 0 {
			return nil, invalid("rule %d (%s) can never apply: an earlier rule decides every call", i, r.Syscall)
		}
		sr.rules = append(sr.rules, r)
	}
	out := make([]syscallRules, 0, len(byNr))
	for _, sr := range byNr {
		out = append(out, *sr)
	}
	slices.SortFunc(out, func(a, b syscallRules) int { return a.nr - b.nr })
	return out, nil
}

// Named returns a fresh copy of one of the project's profiles:
//
//   - "executor": the target of a native tool call. Default allow; denies
//     with EPERM what a sandboxed program never needs and escapes use.
//   - "executor-nonet": "executor", and no sockets but AF_UNIX.
//   - "executor-sealed", "executor-sealed-nonet": the same for a target with
//     no namespaces (Tier C on Landlock alone): also no socket(AF_UNIX) (the
//     host's named Unix sockets are reachable otherwise) and no SysV IPC.
//   - "broker", "verifier": the daemons, on themselves after start-up.
//     Allow-lists; anything else kills the process.
func Named(name string) (*Profile, error) {
	switch name {
	case "executor":
		return executorProfile(name, false, false), nil
	case "executor-nonet":
		return executorProfile(name, true, false), nil
	case "executor-sealed":
		return executorProfile(name, false, true), nil
	case "executor-sealed-nonet":
		return executorProfile(name, true, true), nil
	case "broker":
		return daemonProfile(name, brokerRules()), nil
	case "verifier":
		return daemonProfile(name, verifierRules()), nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownProfile, name)
}

// Names lists the profiles Named knows.
func Names() []string {
	return []string{"executor", "executor-nonet", "executor-sealed", "executor-sealed-nonet", "broker", "verifier"}
}

// InstallNamed compiles one of the project's profiles for this machine and
// installs it (see [Install]), returning the program's digest.
func InstallNamed(name string) (string, error) {
	p, err := Named(name)
	if err != nil {
		return "", err
	}
	prog, err := p.Compile(NativeArch())
	if err != nil {
		return "", err
	}
	if err := Install(prog); err != nil {
		return "", err
	}
	return prog.Digest(), nil
}
