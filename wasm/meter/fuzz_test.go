package meter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrument feeds arbitrary bytes to Instrument. Whatever the input,
// it must not panic. For bytes wazero refuses it must refuse too; for bytes
// wazero accepts it must either refuse with a class that does not depend on
// validity (ErrReserved, ErrLimit, and a v128 or exnref type, see laxValueType) or return
// a module wazero accepts, with the instrumentation's exports. The seed corpus is in
// testdata/fuzz/FuzzInstrument (see TestWriteFuzzCorpus) plus the fixtures
// and refusal cases added here. Run with:
//
//	go test -run '^$' -fuzz FuzzInstrument -fuzztime 30s ./wasm/meter
func FuzzInstrument(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(Features).WithDebugInfoEnabled(false))
	f.Cleanup(func() { rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, module []byte) {
		out, info, err := Instrument(module, Config{MaxDepth: 64})
		switch {
		case errors.Is(err, ErrInvalid):
			return // wazero refused it
		case errors.Is(err, ErrReserved), errors.Is(err, ErrLimit), laxValueType(err):
			return // refused whether or not it is valid
		case errors.Is(err, errTruncated):
			return // a count or length past the end: no decoder accepts it
		case err != nil:
			// Refused by the walk, before wazero saw it: wazero must
			// refuse it too. wazero sizes allocations by counts and
			// locals it has not checked yet (2^32 locals, or a vector
			// count of 2^28, take gigabytes), so it is only asked when
			// those are plausible.
			if plausible(module) && validate(stripCustom(module)) == nil {
				t.Fatalf("wazero accepts the module, Instrument refused it: %v", err)
			}
			return
		}
		if info.OutBytes != len(out) {
			t.Fatalf("info %+v for %d bytes", info, len(out))
		}
		cm, err := rt.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("the instrumented module does not compile: %v", err)
		}
		defer cm.Close(ctx)
		exports, err := globalExports(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{UsedExport, LimitExport, DepthExport} {
			if !exports[name] {
				t.Fatalf("no global export %s", name)
			}
		}
	})
}

// stripCustom returns module without its custom sections, as Instrument
// validates it (module must split into sections).
func stripCustom(module []byte) []byte {
	out := append([]byte(nil), wasmHeader...)
	ok := forSections(module, func(id byte, s *reader) bool {
		if id != secCustom {
			out = appendSection(out, id, s.buf)
		}
		return true
	})
	if !ok {
		return module
	}
	return out
}

// forSections calls each for every section until it returns false, and
// reports whether the module split into sections cleanly.
func forSections(module []byte, each func(id byte, s *reader) bool) bool {
	r := &reader{buf: module}
	if hdr, err := r.bytes(uint32(len(wasmHeader))); err != nil || !bytes.Equal(hdr, wasmHeader) {
		return false
	}
	for r.remaining() > 0 {
		id, err := r.byte()
		if err != nil {
			return false
		}
		size, err := r.u32()
		if err != nil {
			return false
		}
		s, err := r.sub(size)
		if err != nil {
			return false
		}
		if !each(id, s) {
			return false
		}
	}
	return true
}

// plausible is an independent check that wazero can decode module without
// sizing an allocation by an implausible number: every section's vector
// count, type vector, name, data segment, function's locals and element
// segment's init vector fits in the bytes present.
func plausible(module []byte) bool {
	return forSections(module, func(id byte, s *reader) bool {
		switch id {
		case secCustom, secStart, secDataCount:
			return true
		}
		n, err := s.count()
		if err != nil {
			return false
		}
		switch id {
		case secCode:
			for range n {
				size, err := s.u32()
				if err != nil {
					return false
				}
				body, err := s.sub(size)
				if err != nil || !plausibleLocals(body) {
					return false
				}
			}
		case secElement:
			for range n {
				if !plausibleSegment(s) {
					return false
				}
			}
		case secType:
			for range n {
				if _, err := s.byte(); err != nil {
					return false
				}
				for range 2 { // parameters, results
					k, err := s.count()
					if err != nil {
						return false
					}
					if _, err := s.bytes(k); err != nil {
						return false
					}
				}
			}
		case secImport, secExport:
			for range n {
				if !plausibleEntry(s, id == secImport) {
					return false
				}
			}
		case secData:
			for range n {
				flags, err := s.u32()
				if err != nil || flags > 2 {
					return false
				}
				if flags == 2 {
					if _, err := s.u32(); err != nil {
						return false
					}
				}
				if flags != 1 && !plausibleExpr(s) {
					return false
				}
				k, err := s.count()
				if err != nil {
					return false
				}
				if _, err := s.bytes(k); err != nil {
					return false
				}
			}
		}
		return true
	})
}

// plausibleEntry checks the names of an import or export and skips its
// description.
func plausibleEntry(s *reader, isImport bool) bool {
	for range 1 + b2i(isImport) {
		k, err := s.count()
		if err != nil {
			return false
		}
		if _, err := s.bytes(k); err != nil {
			return false
		}
	}
	kind, err := s.byte()
	if err != nil {
		return false
	}
	if !isImport {
		_, err = s.u32()
		return err == nil
	}
	switch kind {
	case kindFunc:
		_, err = s.u32()
	case kindTable:
		if _, err = s.byte(); err == nil {
			_, err = limits(s)
		}
	case kindMemory:
		_, err = limits(s)
	case kindGlobal:
		_, err = s.bytes(2)
	default:
		return false
	}
	return err == nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func plausibleLocals(body *reader) bool {
	groups, err := body.count()
	if err != nil {
		return false
	}
	var sum uint64
	for range groups {
		k, err := body.u32()
		if err != nil {
			return false
		}
		t, err := body.byte()
		if err != nil || t == 0x63 || t == 0x64 { // wazero reads a heap type past the body
			return false
		}
		if sum += uint64(k); sum > MaxLocals {
			return false
		}
	}
	return true
}

func plausibleSegment(s *reader) bool {
	flags, err := s.u32()
	if err != nil || flags > 7 {
		return false
	}
	if flags&3 == 2 {
		if _, err := s.u32(); err != nil {
			return false
		}
	}
	if flags&1 == 0 && !plausibleExpr(s) {
		return false
	}
	if flags&3 != 0 {
		if _, err := s.byte(); err != nil {
			return false
		}
	}
	n, err := s.count()
	if err != nil {
		return false
	}
	for range n {
		if flags&4 != 0 {
			if !plausibleExpr(s) {
				return false
			}
		} else if _, err := s.u32(); err != nil {
			return false
		}
	}
	return true
}

func plausibleExpr(s *reader) bool {
	for {
		op, err := s.byte()
		if err != nil {
			return false
		}
		switch op {
		case 0x0b:
			return true
		case 0x41, 0x42:
			_, err = s.sleb(64)
		case 0x43:
			_, err = s.bytes(4)
		case 0x44:
			_, err = s.bytes(8)
		case 0x23, 0xd2:
			_, err = s.u32()
		case 0xd0:
			_, err = s.byte()
		default:
			return false
		}
		if err != nil {
			return false
		}
	}
}

// globalExports returns the names of a module's global exports.
func globalExports(module []byte) (map[string]bool, error) {
	names := map[string]bool{}
	var err error
	forSections(module, func(id byte, s *reader) bool {
		if id != secExport {
			return true
		}
		_, err = vector(s, "export section", func(uint32) error {
			name, err := s.name()
			if err != nil {
				return err
			}
			kind, err := s.byte()
			if err != nil {
				return err
			}
			if kind == kindGlobal {
				names[string(name)] = true
			}
			_, err = s.u32()
			return err
		})
		return err == nil
	})
	return names, err
}

// laxValueType reports the refusal of a value type from a disabled
// feature. wazero refuses the instructions of SIMD or exceptions when those
// are disabled, but accepts v128 and exnref in function types and locals;
// Instrument refuses both.
func laxValueType(err error) bool {
	var fe *FeatureError
	return errors.As(err, &fe) && strings.HasPrefix(fe.Opcode, "value type")
}

// fuzzSeeds are the fixtures, the refusal cases and the programmatic
// modules of the other tests.
func fuzzSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{elementsModule(), hostChargeModule()}
	wasms, _ := filepath.Glob(filepath.Join(fixtureDir, "*.wasm"))
	for _, p := range wasms {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, tc := range refusalCases {
		if tc.class != ErrLimit { // large
			seeds = append(seeds, tc.module(t))
		}
	}
	return seeds
}

// TestWriteFuzzCorpus writes fuzzSeeds into testdata/fuzz/FuzzInstrument,
// so that the corpus stays with the package even when the fixtures move. It
// runs only when asked:
//
//	STOCKADE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./wasm/meter
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("STOCKADE_WRITE_CORPUS") == "" {
		t.Skip("set STOCKADE_WRITE_CORPUS=1 to rewrite the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzInstrument")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, seed := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
