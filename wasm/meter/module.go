package meter

import (
	"bytes"
	"fmt"
	"math"
)

// Section ids, WebAssembly core specification 2.0.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13 // exception handling
	numSections  = 13
)

// sectionRank is each known section's place in the required order (the data
// count section sits between element and code).
var sectionRank = [numSections]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secGlobal: 6, secExport: 7, secStart: 8, secElement: 9, secDataCount: 10,
	secCode: 11, secData: 12,
}

// External kinds, for imports and exports.
const (
	kindFunc   = 0
	kindTable  = 1
	kindMemory = 2
	kindGlobal = 3
	kindTag    = 4 // exception handling
)

// Value types.
const (
	valI32       = 0x7f
	valI64       = 0x7e
	valF32       = 0x7d
	valF64       = 0x7c
	valV128      = 0x7b
	valFuncref   = 0x70
	valExternref = 0x6f
	valExnref    = 0x69
)

var wasmHeader = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// moduleRewriter holds what one instrumentation learns about the module's
// index spaces, and the indices it adds.
type moduleRewriter struct {
	cfg  Config
	info Info
	core []byte // the module without its custom sections

	sections [numSections]*reader // known sections as read; nil when absent

	types         []funcType
	funcTypes     []uint32 // type index of each defined function
	funcImports   uint32
	globalImports uint32
	globals       uint32 // defined globals
	memories      uint32 // defined and imported

	// Indices the instrumentation adds. Types are appended after the
	// module's: () -> (), then () -> (results) for the multi-value results
	// of functions with parameters (see blockTypeFor).
	voidType                uint32
	resultTypes             map[string]uint32 // encoded results -> type index
	extraTypes              [][]byte          // result types of each, after voidType
	refillFunc, depthFunc   uint32
	usedGlobal, limitGlobal uint32
	depthGlobal             uint32
	funcShift               uint32 // added to every defined function's index

	body      bodyRewriter // reused across function bodies
	funcs     []*funcIR    // the walked bodies, by defined function
	copyIndex []uint32     // per defined function: the index of its uncharged copy, if hoistable
	copies    []uint32     // the defined functions that have a copy, in index order
}

// run instruments module, whose sections it keeps in w.
func (w *moduleRewriter) run(module []byte) ([]byte, error) {
	r := &reader{buf: module}
	hdr, err := r.bytes(uint32(len(wasmHeader)))
	if err != nil || !bytes.Equal(hdr, wasmHeader) {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary", ErrMalformed)
	}
	w.core = append(make([]byte, 0, len(module)), wasmHeader...)
	if err := w.split(r); err != nil {
		return nil, err
	}
	// Decode in section order: each section's meaning depends on the ones
	// before it.
	if err := w.decodeTypes(); err != nil {
		return nil, err
	}
	imports, err := w.rewriteImports()
	if err != nil {
		return nil, err
	}
	if err := w.decodeFunctions(); err != nil {
		return nil, err
	}
	if err := w.checkTables(); err != nil {
		return nil, err
	}
	if err := w.checkMemories(); err != nil {
		return nil, err
	}
	w.assignIndices()
	globals, err := w.rewriteGlobals()
	if err != nil {
		return nil, err
	}
	exports, err := w.rewriteExports()
	if err != nil {
		return nil, err
	}
	start, err := w.rewriteStart()
	if err != nil {
		return nil, err
	}
	elements, err := w.rewriteElements()
	if err != nil {
		return nil, err
	}
	code, err := w.rewriteCode()
	if err != nil {
		return nil, err
	}
	if err := w.checkData(); err != nil {
		return nil, err
	}

	out := make([]byte, 0, len(module)+len(code)-w.sectionLen(secCode)+256)
	out = append(out, wasmHeader...)
	out = appendSection(out, secType, w.typeSection())
	out = appendSection(out, secImport, imports)
	if functions := w.functionSection(); functions != nil {
		out = appendSection(out, secFunction, functions)
	}
	out = w.appendCopy(out, secTable)
	out = w.appendCopy(out, secMemory)
	out = appendSection(out, secGlobal, globals)
	out = appendSection(out, secExport, exports)
	if start != nil {
		out = appendSection(out, secStart, start)
	}
	if elements != nil {
		out = appendSection(out, secElement, elements)
	}
	out = w.appendCopy(out, secDataCount)
	if code != nil {
		if len(code) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: instrumented code section over 4 GiB", ErrLimit)
		}
		out = appendSection(out, secCode, code)
	}
	out = w.appendCopy(out, secData)
	return out, nil
}

// split records each known section and checks their order. Custom sections
// are counted and dropped.
func (w *moduleRewriter) split(r *reader) error {
	last := 0
	for r.remaining() > 0 {
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		s, err := r.sub(size)
		if err != nil {
			return err
		}
		switch {
		case id == secCustom:
			// Dropped unread: neither the rewrite nor the validation
			// (of core) depends on its contents.
			w.info.Dropped++
			continue
		case id == secTag:
			return unsupported(FeatureExceptions, s.base, "tag section")
		case id >= numSections:
			return s.failf("unknown section id %d", id)
		}
		if rank := sectionRank[id]; rank <= last {
			return s.failf("section %d out of order or repeated", id)
		} else {
			last = rank
		}
		w.sections[id] = s
		w.core = appendSection(w.core, id, s.buf)
	}
	return nil
}

// sectionLen is the size of a known section, 0 when absent.
func (w *moduleRewriter) sectionLen(id int) int {
	if s := w.sections[id]; s != nil {
		return len(s.buf)
	}
	return 0
}

// appendCopy copies a section the instrumentation does not change.
func (w *moduleRewriter) appendCopy(out []byte, id int) []byte {
	if s := w.sections[id]; s != nil {
		return appendSection(out, byte(id), s.buf)
	}
	return out
}

// vector runs each for every element of a vector and checks that nothing
// follows it in the section.
func vector(s *reader, what string, each func(i uint32) error) (uint32, error) {
	n, err := s.count()
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i < n; i++ {
		if err := each(i); err != nil {
			return 0, err
		}
	}
	return n, s.end(what)
}

// assignIndices places the instrumentation's type and functions, once the
// type and import sections are decoded. (Its globals are placed by
// rewriteGlobals, after the module's own.)
func (w *moduleRewriter) assignIndices() {
	w.voidType = uint32(len(w.types))
	w.refillFunc = w.funcImports
	w.depthFunc = w.funcImports + 1
	w.funcShift = 2
}

// funcIndex maps a function index of the original module to the output.
func (w *moduleRewriter) funcIndex(f uint32) uint32 {
	if f < w.funcImports {
		return f
	}
	return f + w.funcShift
}

// rewriteCode rewrites every function body, in two passes: the walk, then
// the assembly, once it is known which functions are hoistable. The
// uncharged copies of those are appended after the defined functions.
func (w *moduleRewriter) rewriteCode() ([]byte, error) {
	s := w.sections[secCode]
	if s == nil {
		if len(w.funcTypes) > 0 {
			return nil, fmt.Errorf("%w: function section without code section", ErrMalformed)
		}
		return nil, nil
	}
	n, err := s.count()
	if err != nil {
		return nil, err
	}
	if int(n) != len(w.funcTypes) {
		return nil, s.failf("%d function bodies for %d functions", n, len(w.funcTypes))
	}
	w.body.m = w
	w.funcs = make([]*funcIR, 0, n)
	for i := uint32(0); i < n; i++ {
		size, err := s.u32()
		if err != nil {
			return nil, err
		}
		fr, err := s.sub(size)
		if err != nil {
			return nil, err
		}
		ir, err := w.body.walk(fr, w.funcTypes[i])
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", w.funcImports+i, err)
		}
		w.funcs = append(w.funcs, ir)
	}
	if err := s.end("code section"); err != nil {
		return nil, err
	}

	w.copyIndex = make([]uint32, n)
	next := w.funcImports + w.funcShift + n
	for i, ir := range w.funcs {
		if ir.hoistable() {
			w.copyIndex[i] = next
			w.copies = append(w.copies, uint32(i))
			next++
		}
	}
	w.info.Hoisted = len(w.copies)
	out := make([]byte, 0, len(s.buf)*2)
	out = appendU32(out, n+uint32(len(w.copies)))
	for _, ir := range w.funcs {
		w.hoistCosts(ir)
		if out, err = w.assemble(ir, false, out); err != nil {
			return nil, err
		}
		w.info.Functions++
	}
	for _, i := range w.copies {
		if out, err = w.assemble(w.funcs[i], true, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// functionSection is the function section with the types of the uncharged
// copies appended; nil when the module defines no function.
func (w *moduleRewriter) functionSection() []byte {
	s := w.sections[secFunction]
	if s == nil {
		return nil
	}
	b := appendU32(nil, uint32(len(w.funcTypes)+len(w.copies)))
	c := &reader{buf: s.buf}
	_, _ = c.count() // already decoded
	b = append(b, c.buf[c.off:]...)
	for _, i := range w.copies {
		b = appendU32(b, w.funcTypes[i])
	}
	return b
}
