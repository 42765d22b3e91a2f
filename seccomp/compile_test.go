package seccomp

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNamedProfiles(t *testing.T) {
	t.Parallel()
	for _, tc := range profileCases {
		for _, arch := range Arches() {
			if tc.arch != "" && tc.arch != arch {
				continue
			}
			t.Run(tc.profile+"/"+string(arch)+"/"+tc.syscall, func(t *testing.T) {
				p, prog := namedProgram(t, tc.profile, arch)
				nr, err := SyscallNumber(arch, tc.syscall)
				if err != nil {
					t.Fatal(err)
				}
				got, err := prog.Eval(arch, nr, tc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("%s(%#x) = %v, want %v", tc.syscall, tc.args[:2], got, tc.want)
				}
				if ref := referenceDecide(p, arch, Data{Nr: int32(nr), Arch: arches[arch].audit, Args: tc.args}); ref != tc.want {
					t.Errorf("the rule table says %v, the case %v", ref, tc.want)
				}
			})
		}
	}
	if _, err := Named("nobody"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("Named(nobody) error = %v, want ErrUnknownProfile", err)
	}
}

// TestNamedProfilesMatchTable runs every system call number (and a few past
// the end) through every compiled profile, with arguments around each
// condition, and compares with the rule table.
func TestNamedProfilesMatchTable(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		for _, arch := range Arches() {
			t.Run(name+"/"+string(arch), func(t *testing.T) {
				t.Parallel()
				p, prog := namedProgram(t, name, arch)
				argSets := interestingArgs(p)
				audit := arches[arch].audit
				for nr := -2; nr < 1100; nr++ {
					for _, args := range argSets {
						checkAgainstReference(t, p, prog, Data{Nr: int32(nr), Arch: audit, Args: args})
					}
				}
				for _, nr := range []uint32{0x3fffffff, 0x40000000, 0x40000000 | 39, 0x40000000 | 101, 0x7fffffff, 0x80000000, math.MaxUint32} {
					for _, a := range auditArches() {
						checkAgainstReference(t, p, prog, Data{Nr: int32(nr), Arch: a})
					}
				}
			})
		}
	}
}

func TestArchitectureChecks(t *testing.T) {
	t.Parallel()
	const auditI386, auditARM = 0x40000003, 0x40000028
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				arch Arch
				d    Data
				want Action
			}{
				{AMD64, Data{Nr: 39, Arch: auditArchAArch64}, ActKillProcess},
				{AMD64, Data{Nr: 20, Arch: auditI386}, ActKillProcess},                    // int 0x80 from a 64-bit process
				{AMD64, Data{Nr: 0x40000000 | 39, Arch: auditArchX86_64}, ActKillProcess}, // x32 getpid
				{AMD64, Data{Nr: 0x40000000 | 101, Arch: auditArchX86_64}, ActKillProcess},
				{AMD64, Data{Nr: -1, Arch: auditArchX86_64}, ActKillProcess},
				{ARM64, Data{Nr: 172, Arch: auditArchX86_64}, ActKillProcess},
				{ARM64, Data{Nr: 20, Arch: auditARM}, ActKillProcess}, // AArch32
				{AMD64, Data{Nr: 39, Arch: auditArchX86_64}, ActAllow},
				{ARM64, Data{Nr: 172, Arch: auditArchAArch64}, ActAllow}, // getpid
			} {
				_, prog := namedProgram(t, name, tc.arch)
				got, err := prog.Run(tc.d)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("%s program, %+v: %v, want %v", tc.arch, tc.d, got, tc.want)
				}
			}
		})
	}
}

func TestCompileRefusesMistakes(t *testing.T) {
	t.Parallel()
	ok := Rule{Syscall: "read", Action: ActAllow}
	for _, tc := range []struct {
		name    string
		arch    Arch
		profile Profile
		wantErr error
		msg     string
	}{
		{"unknown syscall", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "reed", Action: ActAllow}}}, ErrUnknownSyscall, "reed"},
		{"missing on arm64", ARM64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "open", Action: ActEPERM, Why: "x"}}}, ErrUnknownSyscall, "open"},
		{"arch-limited rule for a missing name", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "open", Arch: ARM64, Action: ActEPERM, Why: "x"}}}, nil, ""},
		{"arch-limited rule, wrong name", ARM64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "open", Arch: ARM64, Action: ActEPERM, Why: "x"}}}, ErrUnknownSyscall, "open"},
		{"unsupported rule arch", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Arch: "mips", Action: ActAllow}}}, ErrInvalidProfile, "mips"},
		{"unsupported arch", "riscv64", Profile{Default: ActAllow, Rules: []Rule{ok}}, ErrUnsupportedArch, "riscv64"},
		{"empty name", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Action: ActAllow}}}, ErrInvalidProfile, "names no system call"},
		{"argument 6", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActAllow, When: []Cond{{Arg: 6, Op: OpEqual, Mask: 1, Value: 1}}}}}, ErrInvalidProfile, "out of range"},
		{"argument -1", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActAllow, When: []Cond{{Arg: -1, Op: OpEqual, Mask: 1, Value: 1}}}}}, ErrInvalidProfile, "out of range"},
		{"no op", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActAllow, When: []Cond{{Mask: 1, Value: 1}}}}}, ErrInvalidProfile, "unknown comparison"},
		{"empty mask", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActAllow, When: []Cond{{Op: OpEqual}}}}}, ErrInvalidProfile, "empty mask"},
		{"value outside mask", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "ioctl", Action: ActEPERM, Why: "x", When: []Cond{Arg32MaskedEqual(1, 0xff, 0x5412)}}}}, ErrInvalidProfile, "outside the mask"},
		{"unreachable rule", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActEPERM, Why: "x"}, {Syscall: "read", Action: ActAllow, When: []Cond{Arg32Equal(0, 1)}}}}, ErrInvalidProfile, "never apply"},
		{"denial without reason", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActEPERM}}}, ErrInvalidProfile, "say why"},
		{"errno out of range", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActErrno(4096), Why: "x"}}}, ErrInvalidProfile, "cannot be used"},
		{"trace action", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: actTrace, Why: "x"}}}, ErrInvalidProfile, "cannot be used"},
		{"bad default", AMD64, Profile{Default: actUserNotif, Rules: []Rule{ok}}, ErrInvalidProfile, "default"},
		{"same arch rule twice is fine", AMD64, Profile{Default: ActAllow, Rules: []Rule{{Syscall: "read", Action: ActEPERM, Why: "x", When: []Cond{Arg32Equal(0, 1)}}, {Syscall: "read", Action: ActEPERM, Why: "x"}}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.profile.Name = tc.name
			prog, err := tc.profile.Compile(tc.arch)
			if !errors.Is(err, tc.wantErr) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("Compile error = %v, want %v containing %q", err, tc.wantErr, tc.msg)
			}
			if err == nil && prog.Len() == 0 {
				t.Fatal("empty program")
			}
		})
	}
}

// TestSearchIsBalanced measures, with the interpreter, how many
// instructions the filter runs per system call: about log2 of the number
// of intervals, never a walk along the table.
func TestSearchIsBalanced(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		for _, arch := range Arches() {
			t.Run(name+"/"+string(arch), func(t *testing.T) {
				_, prog := namedProgram(t, name, arch)
				tests := 0
				for _, in := range prog.insns {
					if in.Code == bpfJMP|bpfJGE|bpfK {
						tests++
					}
				}
				// header (arch, nr, x32) + depth + ret; a leaf with
				// conditions adds its own tests, a few per rule.
				depth := bits.Len(uint(tests + 1))
				worst, worstNr := 0, 0
				for nr := range 600 {
					_, steps, err := run(prog.insns, Data{Nr: int32(nr), Arch: arches[arch].audit})
					if err != nil {
						t.Fatal(err)
					}
					if steps > worst {
						worst, worstNr = steps, nr
					}
				}
				_, getpid, _ := run(prog.insns, Data{Nr: int32(arches[arch].names["getpid"]), Arch: arches[arch].audit})
				t.Logf("%d instructions, %d range tests, getpid runs %d, worst %d (nr %d)", prog.Len(), tests, getpid, worst, worstNr)
				if limit := 6 + depth + 1; getpid > limit {
					t.Errorf("getpid runs %d instructions, want at most %d", getpid, limit)
				}
				if worst > 40 {
					t.Errorf("nr %d runs %d instructions, want at most 40", worstNr, worst)
				}
			})
		}
	}
}

// TestLongJumps compiles profiles big enough that jumps pass 255
// instructions, which the assembler must route through trampolines, and
// holds them to the rule table.
func TestLongJumps(t *testing.T) {
	t.Parallel()
	for _, arch := range Arches() {
		t.Run(string(arch), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(arch))))
			// Alternate actions over every system call, with conditions
			// on some, so no two neighbours merge.
			p := &Profile{Name: "long", Default: ActAllow}
			for i, name := range SyscallNames(arch) {
				rule := Rule{Syscall: name, Action: ActErrno(uint16(i%7 + 1)), Why: "test"}
				if i%5 == 0 {
					rule.When = []Cond{randomCond(r), randomCond(r)}
				}
				p.Rules = append(p.Rules, rule)
			}
			prog, err := p.Compile(arch)
			if err != nil {
				t.Fatal(err)
			}
			trampolines := 0
			for _, in := range prog.insns {
				if in.Code == bpfJMP|bpfJA {
					trampolines++
				}
			}
			if trampolines == 0 {
				t.Fatalf("%d instructions and no trampoline: the test does not test long jumps", prog.Len())
			}
			t.Logf("%d instructions, %d trampolines", prog.Len(), trampolines)
			audit := arches[arch].audit
			for nr := -1; nr < 600; nr++ {
				name, _ := SyscallName(arch, nr)
				for range 8 {
					checkAgainstReference(t, p, prog, Data{Nr: int32(nr), Arch: audit, Args: randomArgs(r, p, name)})
				}
			}
		})
	}
}

// TestConditionShapes compiles every shape of condition (each comparison,
// on the low word, the high word or both, against zero or not), alone and
// followed by another on the same argument, and holds the programs to the
// rule table on arguments at and around the compared values.
func TestConditionShapes(t *testing.T) {
	t.Parallel()
	var shapes []Cond
	for _, op := range []Op{OpEqual, OpNotEqual} {
		for _, mask := range []uint64{0xffffffff, 0x00f0, 0xffffffff_00000000, 0x0100_0000_0000, ^uint64(0), 0x00ff_0000_ff00} {
			for _, value := range []uint64{0, 0x1234_5678_9abc_def0 & mask} {
				shapes = append(shapes, Cond{Arg: 1, Op: op, Mask: mask, Value: value})
			}
		}
	}
	var argSets [][6]uint64
	for _, c := range shapes {
		for _, v := range []uint64{c.Value, c.Value ^ 1, c.Value ^ 1<<40, c.Value ^ c.Mask, ^c.Value, 0} {
			argSets = append(argSets, [6]uint64{0, v})
		}
	}
	for _, arch := range Arches() {
		for i, first := range shapes {
			for _, second := range append([]Cond{{}}, shapes...) {
				when := []Cond{first}
				if second.Op != 0 {
					when = append(when, second)
				}
				p := &Profile{Name: "shape", Default: ActAllow, Rules: []Rule{
					{Syscall: "ioctl", When: when, Action: ActEPERM, Why: "test"},
					{Syscall: "ioctl", When: []Cond{first}, Action: ActErrno(uint16(i + 2)), Why: "test"},
				}}
				prog, err := p.Compile(arch)
				if err != nil {
					t.Fatal(err)
				}
				for _, args := range argSets {
					checkAgainstReference(t, p, prog, Data{Nr: int32(arches[arch].names["ioctl"]), Arch: arches[arch].audit, Args: args})
				}
			}
		}
	}
}

func TestRandomProfilesMatchTable(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		arch := Arches()[seed%2]
		p := randomProfile(r, arch, 1+int(seed*seed)%300)
		prog, err := p.Compile(arch)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		audit := arches[arch].audit
		names := SyscallNames(arch)
		for range 3000 {
			name := names[r.IntN(len(names))]
			checkAgainstReference(t, p, prog, Data{Nr: int32(arches[arch].names[name]), Arch: audit, Args: randomArgs(r, p, name)})
		}
	}
}

func TestProgramEncoding(t *testing.T) {
	t.Parallel()
	_, prog := namedProgram(t, "executor", AMD64)
	b := prog.Bytes()
	if len(b) != 8*prog.Len() {
		t.Fatalf("Bytes: %d bytes for %d instructions", len(b), prog.Len())
	}
	// The first instruction loads seccomp_data.arch: BPF_LD|BPF_W|BPF_ABS, k=4.
	if want := []byte{0x20, 0, 0, 0, 4, 0, 0, 0}; string(b[:8]) != string(want) {
		t.Errorf("first instruction % x, want % x", b[:8], want)
	}
	if d := prog.Digest(); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Errorf("Digest = %q", d)
	}
	_, other := namedProgram(t, "executor-nonet", AMD64)
	if prog.Digest() == other.Digest() {
		t.Error("two profiles, one digest")
	}
	s := prog.String()
	for _, want := range []string{`"executor" for amd64`, prog.Digest(), "ret KILL_PROCESS", "ptrace", "ret ERRNO(EPERM)", "jge #0x40000000"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q", want)
		}
	}
}
