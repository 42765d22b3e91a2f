package seccomp

import (
	"errors"
	"testing"
)

func ld(k uint32) insn              { return insn{Code: bpfLD | bpfW | bpfABS, K: k} }
func ret(k uint32) insn             { return insn{Code: bpfRET | bpfK, K: k} }
func aluK(op uint16, k uint32) insn { return insn{Code: bpfALU | op | bpfK, K: k} }
func jmp(op uint16, k uint32, jt, jf uint8) insn {
	return insn{Code: bpfJMP | op | bpfK, Jt: jt, Jf: jf, K: k}
}

// TestInterpreter runs hand-written programs through the interpreter, one
// feature of classic BPF at a time.
func TestInterpreter(t *testing.T) {
	t.Parallel()
	d := Data{Nr: 39, Arch: auditArchX86_64, InstructionPointer: 0x1122334455667788,
		Args: [6]uint64{0xaaaaaaaa_bbbbbbbb, 2, 3, 4, 5, 0xffffffff_00000006}}
	for _, tc := range []struct {
		name string
		prog []insn
		want uint32
	}{
		{"ret k", []insn{ret(7)}, 7},
		{"ret a", []insn{ld(offNr), {Code: bpfRET | bpfA}}, 39},
		{"nr", []insn{ld(0), {Code: bpfRET | bpfA}}, 39},
		{"arch", []insn{ld(4), {Code: bpfRET | bpfA}}, auditArchX86_64},
		{"ip lo", []insn{ld(8), {Code: bpfRET | bpfA}}, 0x55667788},
		{"ip hi", []insn{ld(12), {Code: bpfRET | bpfA}}, 0x11223344},
		{"arg0 lo", []insn{ld(16), {Code: bpfRET | bpfA}}, 0xbbbbbbbb},
		{"arg0 hi", []insn{ld(20), {Code: bpfRET | bpfA}}, 0xaaaaaaaa},
		{"arg5 lo", []insn{ld(56), {Code: bpfRET | bpfA}}, 6},
		{"arg5 hi", []insn{ld(60), {Code: bpfRET | bpfA}}, 0xffffffff},
		{"len", []insn{{Code: bpfLD | bpfW | bpfLEN}, {Code: bpfRET | bpfA}}, 64},
		{"imm, tax, txa", []insn{{Code: bpfLD | bpfIMM, K: 5}, {Code: bpfMISC | bpfTAX}, {Code: bpfLD | bpfIMM, K: 1}, {Code: bpfMISC | bpfTXA}, {Code: bpfRET | bpfA}}, 5},
		{"scratch memory", []insn{{Code: bpfLD | bpfIMM, K: 9}, {Code: bpfST, K: 3}, {Code: bpfLD | bpfIMM, K: 1}, {Code: bpfLDX | bpfMEM, K: 3}, {Code: bpfMISC | bpfTXA}, {Code: bpfRET | bpfA}}, 9},
		{"add", []insn{ld(0), aluK(bpfADD, 3), {Code: bpfRET | bpfA}}, 42},
		{"sub wraps", []insn{ld(0), aluK(bpfSUB, 40), {Code: bpfRET | bpfA}}, 0xffffffff},
		{"mul", []insn{ld(0), aluK(bpfMUL, 2), {Code: bpfRET | bpfA}}, 78},
		{"div", []insn{ld(0), aluK(bpfDIV, 2), {Code: bpfRET | bpfA}}, 19},
		{"mod", []insn{ld(0), aluK(bpfMOD, 10), {Code: bpfRET | bpfA}}, 9},
		{"and", []insn{ld(16), aluK(bpfAND, 0xff), {Code: bpfRET | bpfA}}, 0xbb},
		{"or", []insn{ld(0), aluK(bpfOR, 0x100), {Code: bpfRET | bpfA}}, 0x127},
		{"xor", []insn{ld(0), aluK(bpfXOR, 39), {Code: bpfRET | bpfA}}, 0},
		{"lsh", []insn{ld(0), aluK(bpfLSH, 4), {Code: bpfRET | bpfA}}, 39 << 4},
		{"rsh", []insn{ld(0), aluK(bpfRSH, 1), {Code: bpfRET | bpfA}}, 19},
		{"neg", []insn{ld(0), {Code: bpfALU | bpfNEG}, {Code: bpfRET | bpfA}}, 0xffffffd9},
		{"add x", []insn{{Code: bpfLDX | bpfIMM, K: 1}, ld(0), {Code: bpfALU | bpfADD | bpfX}, {Code: bpfRET | bpfA}}, 40},
		{"div by zero x returns 0", []insn{{Code: bpfLDX | bpfIMM, K: 0}, ld(0), {Code: bpfALU | bpfDIV | bpfX}, ret(1)}, 0},
		{"jeq taken", []insn{ld(0), jmp(bpfJEQ, 39, 0, 1), ret(1), ret(2)}, 1},
		{"jeq not taken", []insn{ld(0), jmp(bpfJEQ, 38, 0, 1), ret(1), ret(2)}, 2},
		{"jgt", []insn{ld(0), jmp(bpfJGT, 39, 0, 1), ret(1), ret(2)}, 2},
		{"jge", []insn{ld(0), jmp(bpfJGE, 39, 0, 1), ret(1), ret(2)}, 1},
		{"jge is unsigned", []insn{ld(60), jmp(bpfJGE, 0x40000000, 0, 1), ret(1), ret(2)}, 1},
		{"jset", []insn{ld(0), jmp(bpfJSET, 0x20, 0, 1), ret(1), ret(2)}, 1},
		{"jset x", []insn{{Code: bpfLDX | bpfIMM, K: 0x40}, ld(0), {Code: bpfJMP | bpfJSET | bpfX, Jt: 0, Jf: 1}, ret(1), ret(2)}, 2},
		{"ja", []insn{{Code: bpfJMP | bpfJA, K: 1}, ret(1), ret(2)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := run(tc.prog, d)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tc.want {
				t.Errorf("got %#x, want %#x", uint32(got), tc.want)
			}
		})
	}
}

// TestValidateRejects holds validate to the kernel's load-time checks.
func TestValidateRejects(t *testing.T) {
	t.Parallel()
	long := make([]insn, bpfMaxInsns+1)
	for i := range long {
		long[i] = ret(0)
	}
	for _, tc := range []struct {
		name string
		prog []insn
	}{
		{"empty", nil},
		{"too long", long},
		{"no return at the end", []insn{ret(0), ld(0)}},
		{"unaligned load", []insn{ld(2), ret(0)}},
		{"load past seccomp_data", []insn{ld(64), ret(0)}},
		{"byte load", []insn{{Code: bpfLD | 0x10 | bpfABS}, ret(0)}},
		{"indirect load", []insn{{Code: bpfLD | bpfW | 0x40}, ret(0)}},
		{"jump past the end", []insn{jmp(bpfJEQ, 0, 0, 1), ret(0)}},
		{"ja past the end", []insn{{Code: bpfJMP | bpfJA, K: 1}, ret(0)}},
		{"huge ja", []insn{{Code: bpfJMP | bpfJA, K: 0xffffffff}, ret(0)}},
		{"division by constant zero", []insn{aluK(bpfDIV, 0), ret(0)}},
		{"shift by 32", []insn{aluK(bpfLSH, 32), ret(0)}},
		{"scratch read before write", []insn{{Code: bpfLD | bpfMEM, K: 1}, ret(0)}},
		{"scratch written on one path only", []insn{ld(0), jmp(bpfJEQ, 1, 0, 1), {Code: bpfST, K: 2}, {Code: bpfLD | bpfMEM, K: 2}, ret(0)}},
		{"scratch out of range", []insn{{Code: bpfST, K: 16}, ret(0)}},
		{"unknown jump", []insn{{Code: bpfJMP | 0x50}, ret(0)}},
		{"neg x", []insn{{Code: bpfALU | bpfNEG | bpfX}, ret(0)}},
		{"ret x", []insn{{Code: bpfRET | 0x08}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validate(tc.prog); !errors.Is(err, ErrInvalidProgram) {
				t.Errorf("validate = %v, want ErrInvalidProgram", err)
			}
			if _, _, err := run(tc.prog, Data{}); err == nil {
				t.Error("run accepted the program")
			}
		})
	}
	// A scratch word written before a branch may be read after it.
	ok := []insn{{Code: bpfST, K: 2}, ld(0), jmp(bpfJEQ, 1, 0, 1), ret(1), {Code: bpfLD | bpfMEM, K: 2}, ret(0)}
	if err := validate(ok); err != nil {
		t.Errorf("valid program refused: %v", err)
	}
}

func TestEvalRange(t *testing.T) {
	t.Parallel()
	_, prog := namedProgram(t, "executor", AMD64)
	for _, nr := range []int{-1 << 31, 1<<32 - 1} {
		if _, err := prog.Eval(AMD64, nr, [6]uint64{}); err != nil {
			t.Errorf("Eval(%d): %v", nr, err)
		}
	}
	for _, nr := range []int{-1<<31 - 1, 1 << 32} {
		if _, err := prog.Eval(AMD64, nr, [6]uint64{}); err == nil {
			t.Errorf("Eval(%d) accepted", nr)
		}
	}
	if _, err := prog.Eval("sparc", 1, [6]uint64{}); !errors.Is(err, ErrUnsupportedArch) {
		t.Errorf("Eval(sparc) = %v", err)
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    Action
		want string
	}{
		{ActAllow, "ALLOW"}, {ActKillProcess, "KILL_PROCESS"}, {ActKillThread, "KILL_THREAD"},
		{ActTrap, "TRAP"}, {ActLog, "LOG"}, {ActEPERM, "ERRNO(EPERM)"}, {ActENOSYS, "ERRNO(ENOSYS)"},
		{ActErrno(200), "ERRNO(200)"}, {actTrace | 3, "TRACE(3)"}, {actUserNotif, "USER_NOTIF"},
		{ActTrap | 2, "TRAP(2)"}, {0x12345678, "RET(0x12345678)"},
	} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("%#x: %q, want %q", uint32(tc.a), got, tc.want)
		}
	}
	if e, ok := ActEPERM.Errno(); !ok || e != EPERM {
		t.Errorf("ActEPERM.Errno() = %d, %v", e, ok)
	}
	if _, ok := ActAllow.Errno(); ok {
		t.Error("ActAllow has an errno")
	}
}

func TestErrnoActions(t *testing.T) {
	t.Parallel()
	if ActEPERM != ActErrno(EPERM) || ActENOSYS != ActErrno(ENOSYS) {
		t.Errorf("ActEPERM %#x, ActENOSYS %#x", uint32(ActEPERM), uint32(ActENOSYS))
	}
}
