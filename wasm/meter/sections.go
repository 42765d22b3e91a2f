package meter

import (
	"bytes"
	"fmt"
)

// The sections other than types and code: each is checked, and rewritten
// where it holds function indices or gains the instrumentation's entries.

// rewriteImports checks the imports, counts functions and globals, and
// appends the two instrumentation functions after the last import.
func (w *moduleRewriter) rewriteImports() ([]byte, error) {
	var n uint32
	var entries []byte
	if s := w.sections[secImport]; s != nil {
		var err error
		start := 0
		n, err = vector(s, "import section", func(i uint32) error {
			if i == 0 {
				start = s.off
			}
			mod, err := s.name()
			if err != nil {
				return err
			}
			if string(mod) == HostModuleName {
				return fmt.Errorf("%w: the module imports from %q", ErrReserved, HostModuleName)
			}
			if _, err := s.name(); err != nil {
				return err
			}
			at := s.pos()
			kind, err := s.byte()
			if err != nil {
				return err
			}
			switch kind {
			case kindFunc:
				t, err := s.u32()
				if err != nil {
					return err
				}
				if t >= uint32(len(w.types)) {
					return s.failf("import of function type %d of %d", t, len(w.types))
				}
				w.funcImports++
				return nil
			case kindTable:
				return tableType(s)
			case kindMemory:
				return w.memoryType(s)
			case kindGlobal:
				w.globalImports++
				return globalType(s)
			case kindTag:
				return unsupported(FeatureExceptions, at, "tag import")
			}
			return s.failf("import kind %#x", kind)
		})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			entries = s.buf[start:]
		}
	}
	voidType := uint32(len(w.types))
	b := appendU32(nil, n+2)
	b = append(b, entries...)
	for _, name := range []string{RefillName, DepthExceededName} {
		b = appendName(b, HostModuleName)
		b = appendName(b, name)
		b = append(b, kindFunc)
		b = appendU32(b, voidType)
	}
	return b, nil
}

// decodeFunctions reads the type index of each defined function.
func (w *moduleRewriter) decodeFunctions() error {
	s := w.sections[secFunction]
	if s == nil {
		return nil
	}
	_, err := vector(s, "function section", func(uint32) error {
		t, err := s.u32()
		if err != nil {
			return err
		}
		if t >= uint32(len(w.types)) {
			return s.failf("function of type %d of %d", t, len(w.types))
		}
		w.funcTypes = append(w.funcTypes, t)
		return nil
	})
	return err
}

// checkTables walks the table section, which is copied as it is.
func (w *moduleRewriter) checkTables() error {
	s := w.sections[secTable]
	if s == nil {
		return nil
	}
	c := &reader{buf: s.buf, base: s.base}
	_, err := vector(c, "table section", func(uint32) error { return tableType(c) })
	return err
}

// checkMemories walks the memory section, which is copied as it is.
func (w *moduleRewriter) checkMemories() error {
	s := w.sections[secMemory]
	if s == nil {
		return nil
	}
	c := &reader{buf: s.buf, base: s.base}
	_, err := vector(c, "memory section", func(uint32) error { return w.memoryType(c) })
	return err
}

// rewriteGlobals re-encodes the global section with ref.func indices moved,
// and appends used, limit and depth.
func (w *moduleRewriter) rewriteGlobals() ([]byte, error) {
	var body []byte
	if s := w.sections[secGlobal]; s != nil {
		n, err := vector(s, "global section", func(uint32) error {
			start := s.off
			if err := globalType(s); err != nil {
				return err
			}
			body = append(body, s.buf[start:s.off]...)
			var err error
			body, err = w.constExpr(s, body)
			return err
		})
		if err != nil {
			return nil, err
		}
		w.globals = n
	}
	w.usedGlobal = w.globalImports + w.globals
	w.limitGlobal = w.usedGlobal + 1
	w.depthGlobal = w.usedGlobal + 2
	b := appendU32(nil, w.globals+3)
	b = append(b, body...)
	b = append(b, valI64, 1, opI64Const, 0, opEnd) // used
	b = append(b, valI64, 1, opI64Const, 0, opEnd) // limit
	b = append(b, valI32, 1, opI32Const, 0, opEnd) // depth
	return b, nil
}

// constExpr copies a constant expression, moving ref.func indices. Only the
// instructions WebAssembly 2.0 allows in one are accepted.
func (w *moduleRewriter) constExpr(s *reader, out []byte) ([]byte, error) {
	for {
		at := s.pos()
		start := s.off
		op, err := s.byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case opEnd:
			return append(out, opEnd), nil
		case opI32Const:
			_, err = s.sleb(32)
		case opI64Const:
			_, err = s.sleb(64)
		case opF32Const:
			_, err = s.bytes(4)
		case opF64Const:
			_, err = s.bytes(8)
		case opGlobalGet:
			_, err = s.u32()
		case opRefNull:
			err = refType(s)
		case opRefFunc:
			var f uint32
			if f, err = s.u32(); err != nil {
				return nil, err
			}
			out = append(out, opRefFunc)
			out = appendU32(out, w.funcIndex(f))
			continue
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // i32/i64 add, sub, mul
			return nil, unsupported(FeatureExtendedConst, at, "%#x in a constant expression", op)
		case opPrefixSIMD:
			return nil, unsupported(FeatureSIMD, at, "%#x in a constant expression", op)
		case opPrefixGC:
			return nil, unsupported(FeatureGC, at, "%#x in a constant expression", op)
		default:
			return nil, s.failf("opcode %#x in a constant expression", op)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s.buf[start:s.off]...)
	}
}

// rewriteExports moves function indices, refuses reserved names and appends
// the instrumentation's three globals.
func (w *moduleRewriter) rewriteExports() ([]byte, error) {
	var body []byte
	var n uint32
	if s := w.sections[secExport]; s != nil {
		var err error
		n, err = vector(s, "export section", func(uint32) error {
			start := s.off
			name, err := s.name()
			if err != nil {
				return err
			}
			if bytes.HasPrefix(name, []byte(ReservedExportPrefix)) {
				return fmt.Errorf("%w: the module exports %q", ErrReserved, name)
			}
			at := s.pos()
			kind, err := s.byte()
			if err != nil {
				return err
			}
			kindEnd := s.off
			idx, err := s.u32()
			if err != nil {
				return err
			}
			switch kind {
			case kindFunc:
				idx = w.funcIndex(idx)
			case kindTable, kindMemory, kindGlobal:
			case kindTag:
				return unsupported(FeatureExceptions, at, "tag export")
			default:
				return s.failf("export kind %#x", kind)
			}
			body = append(body, s.buf[start:kindEnd]...)
			body = appendU32(body, idx)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	b := appendU32(nil, n+3)
	b = append(b, body...)
	for _, e := range []struct {
		name string
		idx  uint32
	}{{UsedExport, w.usedGlobal}, {LimitExport, w.limitGlobal}, {DepthExport, w.depthGlobal}} {
		b = appendName(b, e.name)
		b = append(b, kindGlobal)
		b = appendU32(b, e.idx)
	}
	return b, nil
}

// rewriteStart moves the start function's index.
func (w *moduleRewriter) rewriteStart() ([]byte, error) {
	s := w.sections[secStart]
	if s == nil {
		return nil, nil
	}
	f, err := s.u32()
	if err != nil {
		return nil, err
	}
	if err := s.end("start section"); err != nil {
		return nil, err
	}
	return appendU32(nil, w.funcIndex(f)), nil
}

// rewriteElements re-encodes the element section with every function index
// moved, in each of the eight segment encodings.
func (w *moduleRewriter) rewriteElements() ([]byte, error) {
	s := w.sections[secElement]
	if s == nil {
		return nil, nil
	}
	var b []byte
	n, err := vector(s, "element section", func(uint32) error {
		start := s.off
		flags, err := s.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return s.failf("element segment flags %d", flags)
		}
		active, explicitTable, exprs := flags&1 == 0, flags&2 != 0, flags&4 != 0
		if active && explicitTable {
			if _, err := s.u32(); err != nil { // table index
				return err
			}
		}
		b = append(b, s.buf[start:s.off]...)
		if active {
			if b, err = w.constExpr(s, b); err != nil {
				return err
			}
		}
		if !active || explicitTable { // elemkind or reftype
			kindAt := s.off
			if exprs {
				err = refType(s)
			} else {
				var k byte
				if k, err = s.byte(); err == nil && k != 0 {
					err = s.failf("element kind %#x", k)
				}
			}
			if err != nil {
				return err
			}
			b = append(b, s.buf[kindAt:s.off]...)
		}
		count, err := s.count()
		if err != nil {
			return err
		}
		b = appendU32(b, count)
		for i := uint32(0); i < count; i++ {
			if exprs {
				b, err = w.constExpr(s, b)
			} else {
				var f uint32
				if f, err = s.u32(); err == nil {
					b = appendU32(b, w.funcIndex(f))
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(appendU32(nil, n), b...), nil
}

// checkData walks the data count and data sections, which are copied as
// they are: no function index appears in them.
func (w *moduleRewriter) checkData() error {
	if s := w.sections[secDataCount]; s != nil {
		if _, err := s.u32(); err != nil {
			return err
		}
		if err := s.end("data count section"); err != nil {
			return err
		}
	}
	s := w.sections[secData]
	if s == nil {
		return nil
	}
	_, err := vector(s, "data section", func(uint32) error {
		at := s.pos()
		flags, err := s.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0: // active, memory 0
		case 1: // passive
		case 2: // active, memory index
			mem, err := s.u32()
			if err != nil {
				return err
			}
			if mem != 0 {
				return unsupported(FeatureMultiMemory, at, "data segment for memory %d", mem)
			}
		default:
			return s.failf("data segment flags %d", flags)
		}
		if flags != 1 {
			if _, err := w.constExpr(s, nil); err != nil {
				return err
			}
		}
		n, err := s.u32()
		if err != nil {
			return err
		}
		_, err = s.bytes(n)
		return err
	})
	return err
}
