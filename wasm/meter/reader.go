package meter

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// reader decodes a byte slice it never copies or modifies. Every read checks
// the bytes left first, so no input can make it index out of range, and no
// allocation is sized by a number taken from the input.
type reader struct {
	buf  []byte
	off  int
	base int // offset of buf[0] within the whole module, for error messages
}

func (r *reader) failf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrMalformed, r.base+r.off, fmt.Sprintf(format, args...))
}

// errTruncated marks the malformations that no decoder can accept: a read
// past the end, or a length or count larger than the bytes left.
var errTruncated = errors.New("truncated")

func (r *reader) truncated(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %w: %s", ErrMalformed, r.base+r.off, errTruncated, fmt.Sprintf(format, args...))
}

func (r *reader) pos() int { return r.base + r.off }

func (r *reader) remaining() int { return len(r.buf) - r.off }

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.buf) {
		return 0, r.truncated("unexpected end")
	}
	b := r.buf[r.off]
	r.off++
	return b, nil
}

// bytes returns the next n bytes as a sub-slice of the input.
func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(r.remaining()) {
		return nil, r.truncated("length %d exceeds the %d bytes left", n, r.remaining())
	}
	b := r.buf[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// sub returns a reader over the next n bytes and advances past them.
func (r *reader) sub(n uint32) (*reader, error) {
	at := r.pos()
	b, err := r.bytes(n)
	if err != nil {
		return nil, err
	}
	return &reader{buf: b, base: at}, nil
}

// uleb reads an unsigned LEB128 of at most bits bits, refusing encodings
// longer than ceil(bits/7) bytes and set bits beyond bits in the last byte.
func (r *reader) uleb(bits uint) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits {
			return 0, r.failf("LEB128 longer than %d bits", bits)
		}
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		payload := uint64(b & 0x7f)
		if left := bits - shift; left < 7 && payload>>left != 0 {
			return 0, r.failf("LEB128 overflows %d bits", bits)
		}
		v |= payload << shift
		if b&0x80 == 0 {
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// sleb reads a signed LEB128 of at most bits bits (33 or 64 at most),
// refusing encodings longer than ceil(bits/7) bytes. Like wazero's decoder,
// it does not insist that the unused bits of a full-length encoding repeat
// the sign: the value is the low bits bits, sign-extended. The walk copies
// immediates verbatim, so it needs their length, and wazero validates them.
func (r *reader) sleb(bits uint) (int64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits {
			return 0, r.failf("signed LEB128 longer than %d bits", bits)
		}
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			if s := shift + 7; s < 64 && b&0x40 != 0 {
				v |= ^uint64(0) << s // sign-extend
			}
			// Keep the low bits bits and sign-extend from the top one.
			return int64(v<<(64-bits)) >> (64 - bits), nil
		}
	}
}

// name reads a length-prefixed UTF-8 name as a sub-slice of the input.
func (r *reader) name() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	b, err := r.bytes(n)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, r.failf("name is not UTF-8")
	}
	return b, nil
}

// count reads a vector length. Every element takes at least one byte, so a
// count above the bytes left is malformed; refusing it early bounds every
// loop by the input's size.
func (r *reader) count() (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n) > uint64(r.remaining()) {
		return 0, r.truncated("count %d exceeds the %d bytes left", n, r.remaining())
	}
	return n, nil
}

// end fails unless every byte was consumed.
func (r *reader) end(what string) error {
	if r.remaining() != 0 {
		return r.failf("%d bytes after the end of the %s", r.remaining(), what)
	}
	return nil
}
