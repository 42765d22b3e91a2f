package meter

// The type section, and the value, reference, table, memory and global
// types wherever they appear.

// decodeTypes reads each function type's parameter count and result types.
func (w *moduleRewriter) decodeTypes() error {
	s := w.sections[secType]
	if s == nil {
		return nil
	}
	_, err := vector(s, "type section", func(uint32) error {
		at := s.pos()
		form, err := s.byte()
		if err != nil {
			return err
		}
		switch form {
		case 0x60:
		case 0x4e, 0x4f, 0x50, 0x5e, 0x5f: // rec, sub final, sub, array, struct
			return unsupported(FeatureGC, at, "type form %#x", form)
		default:
			return s.failf("type form %#x", form)
		}
		params, err := valueTypes(s)
		if err != nil {
			return err
		}
		results, err := valueTypes(s)
		if err != nil {
			return err
		}
		// Every value type this package accepts is one byte.
		w.types = append(w.types, funcType{params: params, results: s.buf[s.off-int(results) : s.off]})
		return nil
	})
	return err
}

// funcType is what the instrumentation needs of a function type.
type funcType struct {
	params  uint32
	results []byte // the result types, one byte each
}

// typeSection is the type section with the instrumentation's types
// appended.
func (w *moduleRewriter) typeSection() []byte {
	var b []byte
	b = appendU32(b, uint32(len(w.types)+1+len(w.extraTypes)))
	if s := w.sections[secType]; s != nil {
		c := &reader{buf: s.buf}
		_, _ = c.count() // already decoded
		b = append(b, c.buf[c.off:]...)
	}
	b = append(b, 0x60, 0, 0)
	for _, results := range w.extraTypes {
		b = append(b, 0x60, 0)
		b = appendU32(b, uint32(len(results)))
		b = append(b, results...)
	}
	return b
}

// blockTypeFor returns the encoded block type of a block that produces the
// results of function type t: empty, one value type, the function's own
// type when it has no parameters, or an appended () -> (results).
func (w *moduleRewriter) blockTypeFor(t uint32, out []byte) []byte {
	ft := w.types[t]
	switch {
	case len(ft.results) == 0:
		return append(out, blockTypeEmpty)
	case len(ft.results) == 1:
		return append(out, ft.results[0])
	case ft.params == 0:
		return appendSLEB(out, int64(t))
	}
	idx, ok := w.resultTypes[string(ft.results)]
	if !ok {
		idx = w.voidType + 1 + uint32(len(w.extraTypes))
		w.extraTypes = append(w.extraTypes, ft.results)
		if w.resultTypes == nil {
			w.resultTypes = map[string]uint32{}
		}
		w.resultTypes[string(ft.results)] = idx
	}
	return appendSLEB(out, int64(idx))
}

// valueTypes reads a vector of value types and returns its length.
func valueTypes(s *reader) (uint32, error) {
	n, err := s.count()
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i < n; i++ {
		if err := valueType(s); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// valueType reads one value type.
func valueType(s *reader) error {
	at := s.pos()
	t, err := s.byte()
	if err != nil {
		return err
	}
	return checkValueType(t, at, s)
}

// checkValueType accepts the value types of Features and classifies the
// others.
func checkValueType(t byte, at int, s *reader) error {
	switch t {
	case valI32, valI64, valF32, valF64, valFuncref, valExternref:
		return nil
	case valV128:
		return unsupported(FeatureSIMD, at, "value type v128")
	case valExnref:
		return unsupported(FeatureExceptions, at, "value type exnref")
	case 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x71, 0x72, 0x73, 0x74:
		return unsupported(FeatureGC, at, "value type %#x", t)
	}
	return s.failf("value type %#x", t)
}

// refType reads a reference type: funcref or externref.
func refType(s *reader) error {
	at := s.pos()
	t, err := s.byte()
	if err != nil {
		return err
	}
	if t == valFuncref || t == valExternref {
		return nil
	}
	if err := checkValueType(t, at, s); err != nil {
		return err
	}
	return s.failf("reference type %#x", t)
}

// limits reads table or memory limits. Bit 0 of the flags: a maximum
// follows; bit 1: shared (threads); bit 2: 64-bit (memory64).
func limits(s *reader) (shared bool, err error) {
	at := s.pos()
	flags, err := s.byte()
	if err != nil {
		return false, err
	}
	switch {
	case flags&4 != 0 && flags < 8:
		return false, unsupported(FeatureMemory64, at, "limits flags %#x", flags)
	case flags > 3:
		return false, s.failf("limits flags %#x", flags)
	}
	if _, err := s.u32(); err != nil {
		return false, err
	}
	if flags&1 != 0 {
		if _, err := s.u32(); err != nil {
			return false, err
		}
	}
	return flags&2 != 0, nil
}

// tableType reads a table type: reference type and limits, not shared.
func tableType(s *reader) error {
	if err := refType(s); err != nil {
		return err
	}
	shared, err := limits(s)
	if err == nil && shared {
		return s.failf("shared table")
	}
	return err
}

// memoryType reads a memory type and counts it: one memory at most, not
// shared (threads) and 32-bit.
func (w *moduleRewriter) memoryType(s *reader) error {
	at := s.pos()
	shared, err := limits(s)
	if err != nil {
		return err
	}
	if shared {
		return unsupported(FeatureAtomics, at, "shared memory")
	}
	w.memories++
	if w.memories > 1 {
		return unsupported(FeatureMultiMemory, at, "second memory")
	}
	return nil
}

// globalType reads a global type: value type and mutability.
func globalType(s *reader) error {
	if err := valueType(s); err != nil {
		return err
	}
	mut, err := s.byte()
	if err != nil {
		return err
	}
	if mut > 1 {
		return s.failf("global mutability %#x", mut)
	}
	return nil
}
