package main

import (
	"errors"
	"fmt"
)

// errUnsupported is the class of every refusal: the bytes are not a
// WebAssembly 2.0 module of the shape this program rewrites.
var errUnsupported = errors.New("wasm-table-max: unsupported module")

var wasmHeader = [8]byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// Section ids, and the order the core specification (2.0) requires of
// the non-custom ones: the data count section (12) sits between element
// (9) and code (10).
const (
	secCustom = 0
	secTable  = 4
)

var sectionRank = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 12: 10, 10: 11, 11: 12}

// Table element types: funcref and externref.
const (
	refFunc   = 0x70
	refExtern = 0x6f
)

// Limits flags of a table type: a minimum alone, or a minimum and a
// maximum. Anything else (table64, shared) is refused.
const (
	limitsMin    = 0x00
	limitsMinMax = 0x01
)

// setTableMax returns module with every table of its table section that
// declares no maximum given one equal to its minimum, and how many it
// changed. Every other byte is copied as it is; the table section is
// re-encoded with minimal LEB128s (its own size included). A module whose
// tables all declare a maximum (or that has none) comes back unchanged,
// so the rewrite is idempotent.
//
// It walks every section's frame (id, size, body) with bounds checks and
// decodes the table section completely; anything it does not understand
// (a bad header, an unknown or repeated section, an over-long or
// overflowing LEB128, a table type it does not know, trailing bytes) is
// refused with an error of class errUnsupported.
func setTableMax(module []byte) ([]byte, int, error) {
	r := &reader{buf: module}
	hdr, err := r.bytes(uint32(len(wasmHeader)))
	if err != nil || [8]byte(hdr) != wasmHeader {
		return nil, 0, r.fail("not a WebAssembly 1.0 binary")
	}
	var (
		tableStart, tableEnd int // the whole table section: id, size and body
		tables               []tableType
		lastRank             int
	)
	for r.remaining() > 0 {
		start := r.off
		id, err := r.byte()
		if err != nil {
			return nil, 0, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, 0, err
		}
		body, err := r.bytes(size)
		if err != nil {
			return nil, 0, err
		}
		if id == secCustom {
			continue
		}
		rank, ok := sectionRank[id]
		if !ok {
			return nil, 0, r.fail("unknown section id %d", id)
		}
		if rank <= lastRank {
			return nil, 0, r.fail("section %d out of order or repeated", id)
		}
		lastRank = rank
		if id == secTable {
			if tables, err = tableSection(&reader{buf: body}); err != nil {
				return nil, 0, fmt.Errorf("table section at byte %d: %w", start, err)
			}
			tableStart, tableEnd = start, r.off
		}
	}

	changed := 0
	for i := range tables {
		if !tables[i].hasMax {
			tables[i].hasMax, tables[i].max = true, tables[i].min
			changed++
		}
	}
	if changed == 0 {
		return module, 0, nil
	}
	var body []byte
	body = appendULEB(body, uint64(len(tables)))
	for _, t := range tables {
		body = append(body, t.ref, limitsMinMax)
		body = appendULEB(body, uint64(t.min))
		body = appendULEB(body, uint64(t.max))
	}
	out := make([]byte, 0, len(module)+len(body)+8)
	out = append(out, module[:tableStart]...)
	out = append(out, secTable)
	out = appendULEB(out, uint64(len(body)))
	out = append(out, body...)
	out = append(out, module[tableEnd:]...)
	return out, changed, nil
}

// tableType is a decoded table type (WebAssembly 2.0: 32-bit limits).
type tableType struct {
	ref      byte
	min, max uint32
	hasMax   bool
}

func tableSection(s *reader) ([]tableType, error) {
	n, err := s.count()
	if err != nil {
		return nil, err
	}
	tables := make([]tableType, 0, n) // n is at most the bytes left
	for range n {
		var t tableType
		if t.ref, err = s.byte(); err != nil {
			return nil, err
		}
		if t.ref != refFunc && t.ref != refExtern {
			return nil, s.fail("table element type %#x", t.ref)
		}
		flags, err := s.byte()
		if err != nil {
			return nil, err
		}
		if flags != limitsMin && flags != limitsMinMax {
			return nil, s.fail("table limits flags %#x", flags)
		}
		if t.min, err = s.u32(); err != nil {
			return nil, err
		}
		if flags == limitsMinMax {
			t.hasMax = true
			if t.max, err = s.u32(); err != nil {
				return nil, err
			}
			if t.max < t.min {
				return nil, s.fail("table maximum %d below its minimum %d", t.max, t.min)
			}
		}
		tables = append(tables, t)
	}
	if s.remaining() != 0 {
		return nil, s.fail("%d bytes after the last table", s.remaining())
	}
	return tables, nil
}

// reader walks a byte slice, checking every length against what is left.
type reader struct {
	buf []byte
	off int
}

func (r *reader) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", errUnsupported, r.off, fmt.Sprintf(format, args...))
}

func (r *reader) remaining() int { return len(r.buf) - r.off }

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.buf) {
		return 0, r.fail("unexpected end")
	}
	b := r.buf[r.off]
	r.off++
	return b, nil
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(r.remaining()) {
		return nil, r.fail("length %d exceeds the %d bytes left", n, r.remaining())
	}
	b := r.buf[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// u32 reads an unsigned LEB128 of at most 32 bits: at most 5 bytes, the
// last one's unused high bits zero (Go's linker pads section sizes to 5
// bytes, which this accepts).
func (r *reader) u32() (uint32, error) {
	var v uint32
	for i := 0; ; i++ {
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		if i == 4 && b&0xf0 != 0 {
			return 0, r.fail("LEB128 overflows 32 bits")
		}
		v |= uint32(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v, nil
		}
	}
}

// count reads a vector length: each element takes at least one byte, so
// a count above the bytes left is refused.
func (r *reader) count() (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n) > uint64(r.remaining()) {
		return 0, r.fail("count %d exceeds the %d bytes left", n, r.remaining())
	}
	return n, nil
}

// appendULEB appends v as a minimal unsigned LEB128.
func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
