package seccomp

import "fmt"

// The assembler lays out instructions whose jumps name labels, and resolves
// them into the relative offsets of classic BPF. A conditional jump reaches
// at most 255 instructions ahead; a longer one is rewritten to jump to a
// trampoline ("ja", 32-bit offset) placed right after it. Inserting a
// trampoline moves what follows, so resolution repeats until nothing is out
// of reach; offsets only grow, so it ends.

// label names an instruction position. next means the instruction after.
type label int

const next label = -1

type asmInsn struct {
	code   uint16
	k      uint32
	jt, jf label // conditional jumps
	ja     label // the target of an unconditional jump
	labels []label
	note   string
}

type assembler struct {
	insns   []asmInsn
	nlabels int
	pending []label
	// What the accumulator holds, as a seccomp_data offset (-1: unknown),
	// so that a word already loaded is not loaded again: acc when control
	// falls through to the next instruction (if fallsThrough), and
	// labelAcc[l] over every jump to l seen so far. Jumps only go forward,
	// so all jumps to a label are emitted before it is bound.
	acc          int64
	fallsThrough bool
	labelAcc     map[label]int64
}

func newAssembler() *assembler {
	return &assembler{acc: -1, fallsThrough: true, labelAcc: map[label]int64{}}
}

func mergeAcc(a, b int64) int64 {
	if a != b {
		return -1
	}
	return a
}

// jumpsTo records that control may reach l with the current accumulator.
func (a *assembler) jumpsTo(l label) {
	if l == next {
		return
	}
	if old, ok := a.labelAcc[l]; ok {
		a.labelAcc[l] = mergeAcc(old, a.acc)
	} else {
		a.labelAcc[l] = a.acc
	}
}

func (a *assembler) newLabel() label {
	a.nlabels++
	return label(a.nlabels - 1)
}

// bind places l at the next instruction emitted.
func (a *assembler) bind(l label) {
	a.pending = append(a.pending, l)
	in, jumped := a.labelAcc[l]
	switch {
	case !jumped:
	case a.fallsThrough:
		a.acc = mergeAcc(a.acc, in)
	default:
		a.acc, a.fallsThrough = in, true
	}
}

func (a *assembler) emit(in asmInsn) {
	in.labels = append(in.labels, a.pending...)
	a.pending = nil
	a.insns = append(a.insns, in)
}

// load loads a word of seccomp_data, unless the accumulator holds it.
func (a *assembler) load(off uint32, note string) {
	if a.acc == int64(off) {
		return
	}
	a.emit(asmInsn{code: bpfLD | bpfW | bpfABS, k: off, note: note})
	a.acc, a.fallsThrough = int64(off), true
}

func (a *assembler) and(k uint32) {
	a.emit(asmInsn{code: bpfALU | bpfAND | bpfK, k: k})
	a.acc = -1
}

func (a *assembler) jump(op uint16, k uint32, jt, jf label, note string) {
	a.emit(asmInsn{code: bpfJMP | op | bpfK, k: k, jt: jt, jf: jf, note: note})
	a.jumpsTo(jt)
	a.jumpsTo(jf)
}

func (a *assembler) ret(act Action, note string) {
	a.emit(asmInsn{code: bpfRET | bpfK, k: uint32(act), note: note})
	a.acc, a.fallsThrough = -1, false
}

func isCondJump(code uint16) bool { return code&0x07 == bpfJMP && code&0xf0 != bpfJA }
func isJA(code uint16) bool       { return code == bpfJMP|bpfJA }

// assemble resolves labels and returns the instructions with their notes.
func (a *assembler) assemble() ([]insn, []string, error) {
	if len(a.pending) > 0 {
		return nil, nil, fmt.Errorf("%w: label after the last instruction", ErrInvalidProgram)
	}
	prog := a.insns
	// Turn every "next" into a real label, so that inserting a trampoline
	// after an instruction cannot change what its "next" means.
	for i := range prog {
		in := &prog[i]
		if !isCondJump(in.code) {
			continue
		}
		if in.jt == next || in.jf == next {
			if i+1 >= len(prog) {
				return nil, nil, fmt.Errorf("%w: jump past the end at %d", ErrInvalidProgram, i)
			}
			l := a.newLabel()
			prog[i+1].labels = append(prog[i+1].labels, l)
			if in.jt == next {
				in.jt = l
			}
			if in.jf == next {
				in.jf = l
			}
		}
	}
	for {
		pos := make([]int, a.nlabels)
		for i := range pos {
			pos[i] = -1
		}
		for i, in := range prog {
			for _, l := range in.labels {
				pos[l] = i
			}
		}
		offset := func(from int, l label) (int, error) {
			if l < 0 || int(l) >= len(pos) || pos[l] < 0 {
				return 0, fmt.Errorf("%w: jump to an unbound label at %d", ErrInvalidProgram, from)
			}
			off := pos[l] - from - 1
			if off < 0 {
				return 0, fmt.Errorf("%w: backward jump at %d", ErrInvalidProgram, from)
			}
			return off, nil
		}
		relaxed := false
		for i := 0; i < len(prog) && !relaxed; i++ {
			in := &prog[i]
			if !isCondJump(in.code) {
				continue
			}
			t, err := offset(i, in.jt)
			if err != nil {
				return nil, nil, err
			}
			f, err := offset(i, in.jf)
			if err != nil {
				return nil, nil, err
			}
			if t <= 255 && f <= 255 {
				continue
			}
			var tramps []asmInsn
			for _, far := range []*label{&in.jt, &in.jf} {
				off := t
				if far == &in.jf {
					off = f
				}
				if off <= 255 {
					continue
				}
				l := a.newLabel()
				tramps = append(tramps, asmInsn{code: bpfJMP | bpfJA, ja: *far, labels: []label{l}})
				*far = l
			}
			prog = append(prog[:i+1], append(tramps, prog[i+1:]...)...)
			relaxed = true
		}
		if relaxed {
			continue
		}
		out := make([]insn, len(prog))
		notes := make([]string, len(prog))
		for i, in := range prog {
			out[i] = insn{Code: in.code, K: in.k}
			notes[i] = in.note
			switch {
			case isCondJump(in.code):
				t, _ := offset(i, in.jt)
				f, _ := offset(i, in.jf)
				out[i].Jt, out[i].Jf = uint8(t), uint8(f)
			case isJA(in.code):
				off, err := offset(i, in.ja)
				if err != nil {
					return nil, nil, err
				}
				out[i].K = uint32(off)
			}
		}
		return out, notes, nil
	}
}
