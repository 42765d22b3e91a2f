// Package wasmenc is a small WebAssembly binary encoder for tests: enough to
// build valid modules programmatically, and, through its low-level helpers,
// modules that break one rule each. It checks nothing.
//
// # Security
//
// Test code only: it encodes what it is given, trusts all of it, and must
// not be linked into a binary.
package wasmenc

import "bytes"

// Section ids.
const (
	SecCustom    = 0
	SecType      = 1
	SecImport    = 2
	SecFunction  = 3
	SecTable     = 4
	SecMemory    = 5
	SecGlobal    = 6
	SecExport    = 7
	SecStart     = 8
	SecElement   = 9
	SecCode      = 10
	SecData      = 11
	SecDataCount = 12
)

// Value types.
const (
	I32       byte = 0x7f
	I64       byte = 0x7e
	F32       byte = 0x7d
	F64       byte = 0x7c
	V128      byte = 0x7b
	Funcref   byte = 0x70
	Externref byte = 0x6f
)

// External kinds.
const (
	KindFunc   byte = 0
	KindTable  byte = 1
	KindMemory byte = 2
	KindGlobal byte = 3
)

// Header is the magic and version of a WebAssembly 1.0 binary.
var Header = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// ULEB encodes v as unsigned LEB128.
func ULEB(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// SLEB encodes v as signed LEB128.
func SLEB(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Cat concatenates byte slices.
func Cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Name is a length-prefixed string.
func Name(s string) []byte { return Cat(ULEB(uint64(len(s))), []byte(s)) }

// Vec is a vector: the count, then the items.
func Vec(items ...[]byte) []byte { return Cat(ULEB(uint64(len(items))), Cat(items...)) }

// Section is a section: id, size, body.
func Section(id byte, body ...[]byte) []byte {
	b := Cat(body...)
	return Cat([]byte{id}, ULEB(uint64(len(b))), b)
}

// FuncType is a function type.
type FuncType struct{ Params, Results []byte }

// Import is an import; Desc is the encoded description after the kind.
type Import struct {
	Module, Name string
	Kind         byte
	Desc         []byte
}

// FuncImport imports a function of type t.
func FuncImport(module, name string, t uint32) Import {
	return Import{module, name, KindFunc, ULEB(uint64(t))}
}

// Local is a group of locals of one type.
type Local struct {
	N    uint32
	Type byte
}

// Func is a defined function. Code is its instructions, including the final
// end.
type Func struct {
	Type   uint32
	Locals []Local
	Code   []byte
}

// Global is a defined global; Init is a constant expression with its end.
type Global struct {
	Type    byte
	Mutable bool
	Init    []byte
}

// Export is an export.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Module is a module to encode. Tables, Memories, Elements and Data are
// given encoded (one entry each, without the vector count).
type Module struct {
	Types    []FuncType
	Imports  []Import
	Funcs    []Func
	Tables   [][]byte
	Memories [][]byte
	Globals  []Global
	Exports  []Export
	Start    *uint32
	Elements [][]byte
	Data     [][]byte
	Customs  [][]byte // custom section bodies (name, then payload)
}

// Encode returns the binary module. Empty sections are left out.
func (m *Module) Encode() []byte {
	out := bytes.Clone(Header)
	if len(m.Types) > 0 {
		var items [][]byte
		for _, t := range m.Types {
			items = append(items, Cat([]byte{0x60}, Vec(split(t.Params)...), Vec(split(t.Results)...)))
		}
		out = append(out, Section(SecType, Vec(items...))...)
	}
	if len(m.Imports) > 0 {
		var items [][]byte
		for _, im := range m.Imports {
			items = append(items, Cat(Name(im.Module), Name(im.Name), []byte{im.Kind}, im.Desc))
		}
		out = append(out, Section(SecImport, Vec(items...))...)
	}
	if len(m.Funcs) > 0 {
		var items [][]byte
		for _, f := range m.Funcs {
			items = append(items, ULEB(uint64(f.Type)))
		}
		out = append(out, Section(SecFunction, Vec(items...))...)
	}
	if len(m.Tables) > 0 {
		out = append(out, Section(SecTable, Vec(m.Tables...))...)
	}
	if len(m.Memories) > 0 {
		out = append(out, Section(SecMemory, Vec(m.Memories...))...)
	}
	if len(m.Globals) > 0 {
		var items [][]byte
		for _, g := range m.Globals {
			mut := byte(0)
			if g.Mutable {
				mut = 1
			}
			items = append(items, Cat([]byte{g.Type, mut}, g.Init))
		}
		out = append(out, Section(SecGlobal, Vec(items...))...)
	}
	if len(m.Exports) > 0 {
		var items [][]byte
		for _, e := range m.Exports {
			items = append(items, Cat(Name(e.Name), []byte{e.Kind}, ULEB(uint64(e.Index))))
		}
		out = append(out, Section(SecExport, Vec(items...))...)
	}
	if m.Start != nil {
		out = append(out, Section(SecStart, ULEB(uint64(*m.Start)))...)
	}
	if len(m.Elements) > 0 {
		out = append(out, Section(SecElement, Vec(m.Elements...))...)
	}
	if len(m.Funcs) > 0 {
		var items [][]byte
		for _, f := range m.Funcs {
			var locals [][]byte
			for _, l := range f.Locals {
				locals = append(locals, Cat(ULEB(uint64(l.N)), []byte{l.Type}))
			}
			body := Cat(Vec(locals...), f.Code)
			items = append(items, Cat(ULEB(uint64(len(body))), body))
		}
		out = append(out, Section(SecCode, Vec(items...))...)
	}
	if len(m.Data) > 0 {
		out = append(out, Section(SecData, Vec(m.Data...))...)
	}
	for _, c := range m.Customs {
		out = append(out, Section(SecCustom, c)...)
	}
	return out
}

func split(b []byte) [][]byte {
	items := make([][]byte, len(b))
	for i := range b {
		items[i] = b[i : i+1]
	}
	return items
}

// Instructions, for writing code by hand.

// Op is a sequence of raw opcode bytes.
func Op(b ...byte) []byte { return b }

// Code concatenates instructions and appends the function's final end.
func Code(parts ...[]byte) []byte { return append(Cat(parts...), 0x0b) }

func I32Const(v int32) []byte      { return Cat([]byte{0x41}, SLEB(int64(v))) }
func I64Const(v int64) []byte      { return Cat([]byte{0x42}, SLEB(v)) }
func Call(f uint32) []byte         { return Cat([]byte{0x10}, ULEB(uint64(f))) }
func RefFunc(f uint32) []byte      { return Cat([]byte{0xd2}, ULEB(uint64(f))) }
func LocalGet(i uint32) []byte     { return Cat([]byte{0x20}, ULEB(uint64(i))) }
func LocalSet(i uint32) []byte     { return Cat([]byte{0x21}, ULEB(uint64(i))) }
func GlobalGet(i uint32) []byte    { return Cat([]byte{0x23}, ULEB(uint64(i))) }
func GlobalSet(i uint32) []byte    { return Cat([]byte{0x24}, ULEB(uint64(i))) }
func Br(l uint32) []byte           { return Cat([]byte{0x0c}, ULEB(uint64(l))) }
func BrIf(l uint32) []byte         { return Cat([]byte{0x0d}, ULEB(uint64(l))) }
func Block(bt byte) []byte         { return []byte{0x02, bt} }
func Loop(bt byte) []byte          { return []byte{0x03, bt} }
func If(bt byte) []byte            { return []byte{0x04, bt} }
func CallIndirect(t uint32) []byte { return Cat([]byte{0x11}, ULEB(uint64(t)), []byte{0}) }

// Limits encodes table or memory limits.
func Limits(min uint32, max *uint32) []byte {
	if max == nil {
		return Cat([]byte{0}, ULEB(uint64(min)))
	}
	return Cat([]byte{1}, ULEB(uint64(min)), ULEB(uint64(*max)))
}

// Const instructions with no immediates used by tests.
var (
	End         = []byte{0x0b}
	Else        = []byte{0x05}
	Return      = []byte{0x0f}
	Unreachable = []byte{0x00}
	Drop        = []byte{0x1a}
	Nop         = []byte{0x01}
	I32Add      = []byte{0x6a}
	I32Sub      = []byte{0x6b}
	I32Eqz      = []byte{0x45}
	BlockEmpty  = byte(0x40)
)
