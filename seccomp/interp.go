package seccomp

import (
	"fmt"
	"math"
)

// Data is the input of a seccomp filter: struct seccomp_data.
type Data struct {
	Nr                 int32
	Arch               uint32 // an AUDIT_ARCH_* value
	InstructionPointer uint64
	Args               [6]uint64
}

// Eval runs the program, without installing it, on a system call made with
// architecture arch's calling convention, and returns the action the
// kernel would take. nr is taken as the kernel's 32-bit int: from
// math.MinInt32 to math.MaxUint32, so that an x32 number (bit 30) or a
// negative one can be tried.
func (p *Program) Eval(arch Arch, nr int, args [6]uint64) (Action, error) {
	info, err := lookupArch(arch)
	if err != nil {
		return 0, err
	}
	if nr < math.MinInt32 || nr > math.MaxUint32 {
		return 0, fmt.Errorf("seccomp: system call number %d out of 32-bit range", nr)
	}
	return p.Run(Data{Nr: int32(uint32(nr)), Arch: info.audit, Args: args})
}

// Run runs the program on d, like the kernel would.
func (p *Program) Run(d Data) (Action, error) {
	act, _, err := run(p.insns, d)
	return act, err
}

// word is the 32-bit word at offset off of seccomp_data, laid out as on
// a little-endian machine; off is aligned and in range (validate checks).
func (d *Data) word(off uint32) uint32 {
	switch {
	case off == offNr:
		return uint32(d.Nr)
	case off == offArch:
		return d.Arch
	case off == offIP:
		return uint32(d.InstructionPointer)
	case off == offIP+4:
		return uint32(d.InstructionPointer >> 32)
	}
	arg := d.Args[(off-offArgs)/8]
	if (off-offArgs)%8 == 4 {
		return uint32(arg >> 32)
	}
	return uint32(arg)
}

// run interprets a classic BPF program as seccomp does: the instructions
// seccomp_check_filter accepts, with the accumulator A, the index
// register X and 16 words of scratch memory. It also returns how many
// instructions ran.
func run(prog []insn, d Data) (act Action, steps int, err error) {
	if err := validate(prog); err != nil {
		return 0, 0, err
	}
	var a, x uint32
	var mem [bpfMemWords]uint32
	for pc := 0; pc < len(prog); pc++ {
		steps++
		in := prog[pc]
		k := in.K
		switch in.Code {
		case bpfLD | bpfW | bpfABS:
			a = d.word(k)
		case bpfLD | bpfW | bpfLEN:
			a = seccompDataSz
		case bpfLDX | bpfW | bpfLEN:
			x = seccompDataSz
		case bpfLD | bpfIMM:
			a = k
		case bpfLDX | bpfIMM:
			x = k
		case bpfLD | bpfMEM:
			a = mem[k]
		case bpfLDX | bpfMEM:
			x = mem[k]
		case bpfST:
			mem[k] = a
		case bpfSTX:
			mem[k] = x
		case bpfMISC | bpfTAX:
			x = a
		case bpfMISC | bpfTXA:
			a = x
		case bpfRET | bpfK:
			return Action(k), steps, nil
		case bpfRET | bpfA:
			return Action(a), steps, nil
		case bpfJMP | bpfJA:
			pc += int(k)
		default:
			src := k
			if in.Code&bpfX != 0 {
				src = x
			}
			switch in.Code & 0x07 {
			case bpfALU:
				var ok bool
				if a, ok = alu(in.Code&0xf0, a, src); !ok {
					return ActKillThread, steps, nil // division by zero X: the filter returns 0
				}
			case bpfJMP:
				if jumpTaken(in.Code&0xf0, a, src) {
					pc += int(in.Jt)
				} else {
					pc += int(in.Jf)
				}
			}
		}
	}
	return 0, steps, fmt.Errorf("%w: ran off the end", ErrInvalidProgram) // validate forbids it
}

func alu(op uint16, a, src uint32) (uint32, bool) {
	switch op {
	case bpfADD:
		return a + src, true
	case bpfSUB:
		return a - src, true
	case bpfMUL:
		return a * src, true
	case bpfDIV:
		if src == 0 {
			return 0, false
		}
		return a / src, true
	case bpfMOD:
		if src == 0 {
			return 0, false
		}
		return a % src, true
	case bpfOR:
		return a | src, true
	case bpfAND:
		return a & src, true
	case bpfXOR:
		return a ^ src, true
	case bpfLSH:
		return a << (src & 31), true
	case bpfRSH:
		return a >> (src & 31), true
	case bpfNEG:
		return -a, true
	}
	return 0, false // validate forbids it
}

func jumpTaken(op uint16, a, src uint32) bool {
	switch op {
	case bpfJEQ:
		return a == src
	case bpfJGT:
		return a > src
	case bpfJGE:
		return a >= src
	case bpfJSET:
		return a&src != 0
	}
	return false
}

// validate checks a program the way the kernel does before loading it
// (bpf_check_classic and seccomp_check_filter): length, known opcodes,
// aligned loads inside seccomp_data, constant shifts and divisors, jumps
// forward and inside the program, a return at the end, and no scratch
// word read before it is written on every path.
func validate(prog []insn) error {
	n := len(prog)
	if n == 0 || n > bpfMaxInsns {
		return fmt.Errorf("%w: %d instructions, want 1 to %d", ErrInvalidProgram, n, bpfMaxInsns)
	}
	bad := func(pc int, why string) error {
		return fmt.Errorf("%w: instruction %d (%#04x): %s", ErrInvalidProgram, pc, prog[pc].Code, why)
	}
	valid := make([]uint16, n) // scratch words written on every path to pc
	for i := range valid {
		valid[i] = 0xffff
	}
	written := uint16(0)
	for pc, in := range prog {
		written &= valid[pc]
		k := in.K
		switch in.Code {
		case bpfLD | bpfW | bpfABS:
			if k%4 != 0 || k >= seccompDataSz {
				return bad(pc, "load outside seccomp_data or unaligned")
			}
		case bpfLD | bpfW | bpfLEN, bpfLDX | bpfW | bpfLEN, bpfLD | bpfIMM, bpfLDX | bpfIMM,
			bpfMISC | bpfTAX, bpfMISC | bpfTXA:
		case bpfRET | bpfK, bpfRET | bpfA:
			written = 0xffff // what follows is reached only by jumps
		case bpfLD | bpfMEM, bpfLDX | bpfMEM:
			if k >= bpfMemWords || written&(1<<k) == 0 {
				return bad(pc, "scratch word read before written")
			}
		case bpfST, bpfSTX:
			if k >= bpfMemWords {
				return bad(pc, "scratch word out of range")
			}
			written |= 1 << k
		case bpfJMP | bpfJA:
			if uint64(k) >= uint64(n-pc-1) {
				return bad(pc, "jump out of the program")
			}
			valid[pc+1+int(k)] &= written
			written = 0xffff
		default:
			op, cls := in.Code&0xf0, in.Code&0x07
			switch {
			case cls == bpfALU && in.Code&^(0xf0|bpfX) == bpfALU && op <= bpfXOR:
				if in.Code&bpfX == 0 && (op == bpfDIV || op == bpfMOD) && k == 0 {
					return bad(pc, "division by zero")
				}
				if in.Code&bpfX == 0 && (op == bpfLSH || op == bpfRSH) && k >= 32 {
					return bad(pc, "shift by 32 or more")
				}
				if op == bpfNEG && in.Code&bpfX != 0 {
					return bad(pc, "unknown opcode")
				}
			case cls == bpfJMP && in.Code&^(0xf0|bpfX) == bpfJMP && op >= bpfJEQ && op <= bpfJSET:
				if int(in.Jt) >= n-pc-1 || int(in.Jf) >= n-pc-1 {
					return bad(pc, "jump out of the program")
				}
				valid[pc+1+int(in.Jt)] &= written
				valid[pc+1+int(in.Jf)] &= written
				written = 0xffff
			default:
				return bad(pc, "opcode seccomp does not accept")
			}
		}
	}
	if c := prog[n-1].Code; c != bpfRET|bpfK && c != bpfRET|bpfA {
		return fmt.Errorf("%w: the last instruction does not return", ErrInvalidProgram)
	}
	return nil
}
