package audit

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// errMalformed is the class of every parse failure: the bytes are not a
// WebAssembly module of the shape this package accepts.
var errMalformed = errors.New("malformed module")

// reader walks a byte slice it never copies. Every read checks the remaining
// length first, so no input can make it index out of range, and nothing it
// returns is allocated from a length taken from the input: names are the only
// allocations, and each is bounded by bytes actually present.
type reader struct {
	buf []byte
	off int
}

func (r *reader) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", errMalformed, r.off, fmt.Sprintf(format, args...))
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

// bytes returns the next n bytes as a sub-slice, checking n against what is left.
func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(r.remaining()) {
		return nil, r.fail("length %d exceeds the %d bytes left", n, r.remaining())
	}
	b := r.buf[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// uleb reads an unsigned LEB128 of at most bits bits. It refuses encodings
// longer than ceil(bits/7) bytes and unused high bits in the last byte, as
// the specification does, so every value has a bounded encoding.
func (r *reader) uleb(bits uint) (uint64, error) {
	var v uint64
	var shift uint
	for {
		if shift >= bits {
			return 0, r.fail("LEB128 longer than %d bits", bits)
		}
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		payload := uint64(b & 0x7f)
		if left := bits - shift; left < 7 && payload>>left != 0 {
			return 0, r.fail("LEB128 overflows %d bits", bits)
		}
		v |= payload << shift
		shift += 7
		if b&0x80 == 0 {
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// sleb skips a signed LEB128 of at most bits bits, checking its length and
// that the unused bits of the last byte are a sign extension.
func (r *reader) sleb(bits uint) error {
	var shift uint
	for {
		if shift >= bits {
			return r.fail("signed LEB128 longer than %d bits", bits)
		}
		b, err := r.byte()
		if err != nil {
			return err
		}
		if left := bits - shift; left < 7 {
			// Bits left-1 to 6 hold the sign and must all be equal.
			mask := byte(0x7f) &^ (byte(1)<<(left-1) - 1)
			if hi := b & mask; b&0x80 != 0 || (hi != 0 && hi != mask) {
				return r.fail("signed LEB128 overflows %d bits", bits)
			}
			return nil
		}
		shift += 7
		if b&0x80 == 0 {
			return nil
		}
	}
}

// name reads a length-prefixed UTF-8 name.
func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", r.fail("name is not UTF-8")
	}
	return string(b), nil
}

// count reads a vector length. Each element takes at least one byte, so a
// count above the bytes left is malformed; refusing it early also means no
// loop runs longer than the input.
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
