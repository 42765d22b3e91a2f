package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// Classic BPF, as seccomp uses it: struct sock_filter and the opcodes of
// linux/bpf_common.h and linux/filter.h.
const (
	bpfLD   = 0x00
	bpfLDX  = 0x01
	bpfST   = 0x02
	bpfSTX  = 0x03
	bpfALU  = 0x04
	bpfJMP  = 0x05
	bpfRET  = 0x06
	bpfMISC = 0x07

	bpfW   = 0x00
	bpfIMM = 0x00
	bpfABS = 0x20
	bpfMEM = 0x60
	bpfLEN = 0x80

	bpfADD = 0x00
	bpfSUB = 0x10
	bpfMUL = 0x20
	bpfDIV = 0x30
	bpfOR  = 0x40
	bpfAND = 0x50
	bpfLSH = 0x60
	bpfRSH = 0x70
	bpfNEG = 0x80
	bpfMOD = 0x90
	bpfXOR = 0xa0

	bpfJA   = 0x00
	bpfJEQ  = 0x10
	bpfJGT  = 0x20
	bpfJGE  = 0x30
	bpfJSET = 0x40

	bpfK = 0x00
	bpfX = 0x08
	bpfA = 0x10 // BPF_RET source

	bpfTAX = 0x00
	bpfTXA = 0x80

	bpfMaxInsns   = 4096 // BPF_MAXINSNS
	bpfMemWords   = 16   // BPF_MEMWORDS
	seccompDataSz = 64   // sizeof(struct seccomp_data)
)

// Offsets in struct seccomp_data. Arguments are 64-bit; a filter loads
// them as two 32-bit words, the low one first on little-endian machines
// (both supported architectures are).
const (
	offNr   = 0
	offArch = 4
	offIP   = 8
	offArgs = 16
)

func argLo(i int) uint32 { return uint32(offArgs + 8*i) }
func argHi(i int) uint32 { return uint32(offArgs + 8*i + 4) }

// insn is one struct sock_filter.
type insn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Program is a compiled seccomp filter for one architecture.
type Program struct {
	profile string
	arch    Arch
	insns   []insn
	notes   []string // a comment per instruction, for String
}

// Arch is the architecture the program filters for.
func (p *Program) Arch() Arch { return p.arch }

// Profile is the name of the profile the program was compiled from.
func (p *Program) Profile() string { return p.profile }

// Len is the number of instructions.
func (p *Program) Len() int { return len(p.insns) }

// Bytes is the program as the kernel takes it: an array of struct
// sock_filter {u16 code; u8 jt; u8 jf; u32 k}, in the byte order of the
// target (little-endian on both supported architectures). This is what
// `bwrap --seccomp FD` reads from FD.
func (p *Program) Bytes() []byte {
	b := make([]byte, 0, 8*len(p.insns))
	for _, in := range p.insns {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// Digest is "sha256:" and the hex SHA-256 of Bytes, for attestations.
func (p *Program) Digest() string {
	sum := sha256.Sum256(p.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// String disassembles the program, one instruction a line: index, the raw
// code, jt, jf and k fields, the mnemonic with absolute jump targets, and a
// comment.
func (p *Program) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# seccomp profile %q for %s: %d instructions, %s\n", p.profile, p.arch, len(p.insns), p.Digest())
	fmt.Fprintf(&b, "# line: code jt jf k          mnemonic\n")
	for i, in := range p.insns {
		line := fmt.Sprintf("%04d: %04x %02x %02x %08x  %s", i, in.Code, in.Jt, in.Jf, in.K, disasm(i, in))
		note := ""
		if i < len(p.notes) {
			note = p.notes[i]
		}
		if note == "" && in.Code == bpfLD|bpfW|bpfABS {
			note = dataField(in.K)
		}
		if note != "" {
			line = fmt.Sprintf("%-56s ; %s", line, note)
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

var aluNames = map[uint16]string{
	bpfADD: "add", bpfSUB: "sub", bpfMUL: "mul", bpfDIV: "div", bpfOR: "or", bpfAND: "and",
	bpfLSH: "lsh", bpfRSH: "rsh", bpfNEG: "neg", bpfMOD: "mod", bpfXOR: "xor",
}

var jmpNames = map[uint16]string{bpfJEQ: "jeq", bpfJGT: "jgt", bpfJGE: "jge", bpfJSET: "jset"}

// disasm renders instruction i in the usual bpf_asm syntax.
func disasm(i int, in insn) string {
	k := in.K
	switch in.Code {
	case bpfLD | bpfW | bpfABS:
		return fmt.Sprintf("ld [%d]", k)
	case bpfLD | bpfW | bpfLEN:
		return "ld #len"
	case bpfLDX | bpfW | bpfLEN:
		return "ldx #len"
	case bpfLD | bpfIMM:
		return fmt.Sprintf("ld #%#x", k)
	case bpfLDX | bpfIMM:
		return fmt.Sprintf("ldx #%#x", k)
	case bpfLD | bpfMEM:
		return fmt.Sprintf("ld M[%d]", k)
	case bpfLDX | bpfMEM:
		return fmt.Sprintf("ldx M[%d]", k)
	case bpfST:
		return fmt.Sprintf("st M[%d]", k)
	case bpfSTX:
		return fmt.Sprintf("stx M[%d]", k)
	case bpfRET | bpfK:
		return "ret " + Action(k).String()
	case bpfRET | bpfA:
		return "ret a"
	case bpfMISC | bpfTAX:
		return "tax"
	case bpfMISC | bpfTXA:
		return "txa"
	case bpfJMP | bpfJA:
		return fmt.Sprintf("ja %04d", i+1+int(k))
	}
	op := in.Code &^ bpfX
	src := fmt.Sprintf("#%#x", k)
	if in.Code&bpfX != 0 {
		src = "x"
	}
	switch in.Code & 0x07 {
	case bpfALU:
		if name, ok := aluNames[op&0xf0]; ok && op&0x07 == bpfALU {
			if op&0xf0 == bpfNEG {
				return name
			}
			return name + " " + src
		}
	case bpfJMP:
		if name, ok := jmpNames[op&0xf0]; ok && op&0x07 == bpfJMP {
			return fmt.Sprintf("%s %s, %04d, %04d", name, src, i+1+int(in.Jt), i+1+int(in.Jf))
		}
	}
	return fmt.Sprintf("unknown opcode %#04x", in.Code)
}

// dataField names the seccomp_data word at offset k.
func dataField(k uint32) string {
	switch {
	case k == offNr:
		return "nr"
	case k == offArch:
		return "arch"
	case k == offIP:
		return "instruction_pointer lo"
	case k == offIP+4:
		return "instruction_pointer hi"
	case k >= offArgs && k < seccompDataSz:
		half := "lo"
		if (k-offArgs)%8 == 4 {
			half = "hi"
		}
		return fmt.Sprintf("args[%d] %s", (k-offArgs)/8, half)
	}
	return ""
}
