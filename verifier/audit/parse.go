package audit

import (
	"strconv"
)

// Section ids from the WebAssembly core specification, 2.0.
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
)

// sectionRank is each known section's place in the required order. The data
// count section sits between element and code. Ids not listed (the tag
// section of the exception-handling proposal and anything newer) are refused.
var sectionRank = map[byte]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secGlobal: 6, secExport: 7, secStart: 8, secElement: 9, secDataCount: 10,
	secCode: 11, secData: 12,
}

// Import kinds.
const (
	kindFunc   = 0
	kindTable  = 1
	kindMemory = 2
	kindGlobal = 3
)

// maxOffenders caps how many refused imports a report names.
const maxOffenders = 4

// limitsType is a decoded table or memory type.
type limitsType struct {
	min, max uint64
	hasMax   bool
	shared   bool // threads proposal
	is64     bool // memory64 proposal
}

// moduleInfo is what the audit needs to know about a module: counts and sizes,
// never per-entry data, so its size does not depend on the input.
type moduleInfo struct {
	imports        int
	refusedImports int      // function imports outside the allowed set, and non-function imports
	offenders      []string // the first maxOffenders of those, quoted
	exports        int
	funcs          int        // defined functions (function section)
	maxBody        int        // largest function body, in bytes
	maxBodyIndex   int        // its index among defined functions
	memories       int        // defined and imported
	memory         limitsType // the first memory
	anyShared      bool       // some memory is shared
	any64          bool       // some memory is 64-bit
	tables         int        // defined and imported
	tableNoMax     bool       // some table declares no maximum
	tableLargest   uint64     // the largest declared size, minimum or maximum
	start          bool
	dataSegments   int
	dataBytes      uint64
	customSections int
	customBytes    uint64
	hasDataCount   bool
	dataCount      uint32
	codeSeen       bool
}

var wasmHeader = [8]byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// parse walks the module's sections once. It checks structure (header,
// section order and sizes, LEB128 encodings, vector counts) and decodes only
// the sections the audit measures; the rest are skipped by their size and
// left to wazero's validation. Imports are compared with allowed as they are
// read, so no per-import state is kept.
func parse(b []byte, allowed Imports) (*moduleInfo, error) {
	r := &reader{buf: b}
	hdr, err := r.bytes(uint32(len(wasmHeader)))
	if err != nil {
		return nil, r.fail("no WebAssembly header")
	}
	if [8]byte(hdr) != wasmHeader {
		return nil, r.fail("not a WebAssembly 1.0 binary")
	}
	m := &moduleInfo{}
	lastRank := 0
	for r.remaining() > 0 {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		start := r.off
		body, err := r.bytes(size)
		if err != nil {
			return nil, err
		}
		if id != secCustom {
			rank, ok := sectionRank[id]
			if !ok {
				return nil, r.fail("unknown section id %d", id)
			}
			if rank <= lastRank {
				return nil, r.fail("section %d out of order or repeated", id)
			}
			lastRank = rank
		}
		s := &reader{buf: body}
		if err := m.section(id, s, allowed); err != nil {
			// Report offsets within the whole module.
			return nil, &offsetError{err: err, base: start}
		}
	}
	if m.funcs > 0 && !m.codeSeen {
		return nil, r.fail("function section without code section")
	}
	if m.hasDataCount && uint32(m.dataSegments) != m.dataCount {
		return nil, r.fail("data count %d but %d data segments", m.dataCount, m.dataSegments)
	}
	return m, nil
}

// offsetError keeps a section's error but says where the section began.
type offsetError struct {
	err  error
	base int
}

func (e *offsetError) Error() string {
	return e.err.Error() + " (in the section at byte " + strconv.Itoa(e.base) + ")"
}

func (e *offsetError) Unwrap() error { return e.err }

func (m *moduleInfo) section(id byte, s *reader, allowed Imports) error {
	var err error
	switch id {
	case secCustom:
		m.customSections++
		m.customBytes += uint64(len(s.buf))
		_, err = s.name()
		return err // the payload is not interpreted
	case secImport:
		err = m.importSection(s, allowed)
	case secFunction:
		var n uint32
		if n, err = s.count(); err == nil {
			m.funcs = int(n)
			for i := uint32(0); i < n && err == nil; i++ {
				_, err = s.u32()
			}
		}
	case secTable:
		err = m.vector(s, func() error {
			t, err := tableType(s)
			m.addTable(t)
			return err
		})
	case secMemory:
		err = m.vector(s, func() error {
			t, err := memoryType(s)
			m.addMemory(t)
			return err
		})
	case secGlobal:
		err = m.vector(s, func() error {
			if _, err := s.bytes(2); err != nil { // value type, mutability
				return err
			}
			return constExpr(s)
		})
	case secExport:
		err = m.vector(s, func() error {
			m.exports++
			if _, err := s.name(); err != nil {
				return err
			}
			if _, err := s.byte(); err != nil {
				return err
			}
			_, err := s.u32()
			return err
		})
	case secStart:
		m.start = true
		_, err = s.u32()
	case secDataCount:
		m.hasDataCount = true
		m.dataCount, err = s.u32()
	case secCode:
		err = m.codeSection(s)
	case secData:
		err = m.dataSection(s)
	default: // type and element: validated by wazero, skipped here once
		// their counts are known to fit: wazero allocates by the count
		// before it reads an entry (a 14-byte module claiming 2^25
		// entries cost it gigabytes).
		n, err := s.count()
		if err != nil {
			return err
		}
		if id == secType && uint64(n)*3 > uint64(s.remaining()) { // 0x60, two vectors
			return s.fail("%d types in %d bytes", n, s.remaining())
		}
		return nil
	}
	if err != nil {
		return err
	}
	if s.remaining() != 0 {
		return s.fail("%d bytes after the end of section %d", s.remaining(), id)
	}
	return nil
}

func (m *moduleInfo) addMemory(t limitsType) {
	m.memories++
	if m.memories == 1 {
		m.memory = t
	}
	m.anyShared = m.anyShared || t.shared
	m.any64 = m.any64 || t.is64
}

func (m *moduleInfo) addTable(t limitsType) {
	m.tables++
	m.tableNoMax = m.tableNoMax || !t.hasMax
	m.tableLargest = max(m.tableLargest, t.min, t.max)
}

func (m *moduleInfo) vector(s *reader, each func() error) error {
	n, err := s.count()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := each(); err != nil {
			return err
		}
	}
	return nil
}

func (m *moduleInfo) importSection(s *reader, allowed Imports) error {
	return m.vector(s, func() error {
		m.imports++
		mod, err := s.name()
		if err != nil {
			return err
		}
		name, err := s.name()
		if err != nil {
			return err
		}
		kind, err := s.byte()
		if err != nil {
			return err
		}
		ok := false
		switch kind {
		case kindFunc:
			_, err = s.u32()
			ok = allowed.Allows(Import{Module: mod, Name: name})
		case kindTable:
			var t limitsType
			t, err = tableType(s)
			m.addTable(t)
		case kindMemory:
			var t limitsType
			t, err = memoryType(s)
			m.addMemory(t)
		case kindGlobal:
			_, err = s.bytes(2)
		default:
			return s.fail("import kind %d", kind)
		}
		if err != nil {
			return err
		}
		if !ok {
			m.refusedImports++
			if len(m.offenders) < maxOffenders {
				m.offenders = append(m.offenders, quote(mod+"."+name))
			}
		}
		return nil
	})
}

func (m *moduleInfo) codeSection(s *reader) error {
	m.codeSeen = true
	n, err := s.count()
	if err != nil {
		return err
	}
	if int(n) != m.funcs {
		return s.fail("%d function bodies for %d functions", n, m.funcs)
	}
	for i := 0; i < int(n); i++ {
		size, err := s.u32()
		if err != nil {
			return err
		}
		body, err := s.bytes(size)
		if err != nil {
			return err
		}
		if err := checkLocals(&reader{buf: body}, i); err != nil {
			return err
		}
		if int(size) > m.maxBody {
			m.maxBody, m.maxBodyIndex = int(size), i
		}
	}
	return nil
}

func (m *moduleInfo) dataSection(s *reader) error {
	return m.vector(s, func() error {
		m.dataSegments++
		flags, err := s.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0: // active, memory 0
			err = constExpr(s)
		case 1: // passive
		case 2: // active, explicit memory
			if _, err = s.u32(); err == nil {
				err = constExpr(s)
			}
		default:
			return s.fail("data segment flags %d", flags)
		}
		if err != nil {
			return err
		}
		n, err := s.u32()
		if err != nil {
			return err
		}
		if _, err := s.bytes(n); err != nil {
			return err
		}
		m.dataBytes += uint64(n)
		return nil
	})
}

// limits reads the flags byte and bounds shared by tables and memories.
// Bit 0: a maximum follows; bit 1: shared (threads); bit 2: 64-bit (memory64).
func limits(s *reader, flagMask byte) (limitsType, error) {
	var t limitsType
	flags, err := s.byte()
	if err != nil {
		return t, err
	}
	if flags&^flagMask != 0 {
		return t, s.fail("limits flags %#x", flags)
	}
	t.hasMax, t.shared, t.is64 = flags&1 != 0, flags&2 != 0, flags&4 != 0
	bits := uint(32)
	if t.is64 {
		bits = 64
	}
	if t.min, err = s.uleb(bits); err != nil {
		return t, err
	}
	if t.hasMax {
		if t.max, err = s.uleb(bits); err != nil {
			return t, err
		}
	}
	return t, nil
}

func memoryType(s *reader) (limitsType, error) { return limits(s, 7) }

func tableType(s *reader) (limitsType, error) {
	if _, err := s.byte(); err != nil { // reference type
		return limitsType{}, err
	}
	return limits(s, 1)
}

// constExpr skips a constant expression: the instructions allowed in one by
// WebAssembly 2.0, up to and including end. Anything else is refused here;
// wazero checks types and indices.
func constExpr(s *reader) error {
	for {
		op, err := s.byte()
		if err != nil {
			return err
		}
		switch op {
		case 0x0b: // end
			return nil
		case 0x41: // i32.const
			err = s.sleb(32)
		case 0x42: // i64.const
			err = s.sleb(64)
		case 0x43: // f32.const
			_, err = s.bytes(4)
		case 0x44: // f64.const
			_, err = s.bytes(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, err = s.u32()
		case 0xd0: // ref.null
			_, err = s.byte()
		default:
			return s.fail("opcode %#x in a constant expression", op)
		}
		if err != nil {
			return err
		}
	}
}

// quote makes a name from the module safe to print: ASCII only, no control
// characters, cut short.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.QuoteToASCII(s)
}

// maxLocals caps the locals a function declares: wazero allocates them
// before it compiles a single instruction (a 30-byte module declaring 2^30
// locals exhausts memory), and every call zeroes them.
const maxLocals = 50_000

// checkLocals reads a function body's local declarations: they must fit in
// the body and declare at most maxLocals locals.
func checkLocals(b *reader, function int) error {
	groups, err := b.count()
	if err != nil {
		return err
	}
	total := uint64(0)
	for range groups {
		n, err := b.u32()
		if err != nil {
			return err
		}
		if _, err := b.byte(); err != nil { // the value type
			return err
		}
		if total += uint64(n); total > maxLocals {
			return b.fail("function %d declares over %d locals", function, maxLocals)
		}
	}
	return nil
}
