package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxDepth is the deepest nesting of containers a body may have. The outermost
// container is depth 1.
const MaxDepth = 32

// ErrMalformed is wrapped by every error that [CheckBody] and the decoders return
// for bytes that are not an acceptable message.
var ErrMalformed = errors.New("malformed message")

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
}

// CheckBody walks one msgpack value in b without allocating per element and
// refuses anything the decoder must never be handed:
//
//   - a container (array or map) whose declared count exceeds the bytes that
//     remain (every element takes at least one byte, a map entry at least two);
//   - a string, binary or other length that runs past the end;
//   - nesting deeper than [MaxDepth];
//   - extension types (Stockade's messages use none) and the reserved byte 0xc1;
//   - anything after the first value.
//
// vmihailenco/msgpack v5.4.1 allocates from a container header's count before
// reading any element, so this walk is what keeps a 5-byte array32 header from
// becoming a multi-gigabyte allocation.
func CheckBody(b []byte) error {
	// pending[d] counts the values still expected inside the container open at
	// depth d+1. The top level expects exactly one value.
	var pending [MaxDepth + 1]uint64
	depth := 0
	pending[0] = 1
	i := 0
	for {
		for depth > 0 && pending[depth] == 0 {
			depth--
		}
		if pending[depth] == 0 {
			break
		}
		pending[depth]--
		if i >= len(b) {
			return malformed("truncated at byte %d", i)
		}
		c := b[i]
		i++
		rest := uint64(len(b) - i)
		var skip, count uint64
		var container bool
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
			// fixint, nil, bool
		case c >= 0x80 && c <= 0x8f:
			count, container = 2*uint64(c&0x0f), true
		case c >= 0x90 && c <= 0x9f:
			count, container = uint64(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			skip = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9: // bin8, str8
			n, err := readLen(b, i, 1)
			if err != nil {
				return err
			}
			i++
			skip = n
		case c == 0xc5 || c == 0xda: // bin16, str16
			n, err := readLen(b, i, 2)
			if err != nil {
				return err
			}
			i += 2
			skip = n
		case c == 0xc6 || c == 0xdb: // bin32, str32
			n, err := readLen(b, i, 4)
			if err != nil {
				return err
			}
			i += 4
			skip = n
		case c == 0xca, c == 0xce, c == 0xd2: // float32, uint32, int32
			skip = 4
		case c == 0xcb, c == 0xcf, c == 0xd3: // float64, uint64, int64
			skip = 8
		case c == 0xcc, c == 0xd0:
			skip = 1
		case c == 0xcd, c == 0xd1:
			skip = 2
		case c == 0xdc || c == 0xde: // array16, map16
			n, err := readLen(b, i, 2)
			if err != nil {
				return err
			}
			i += 2
			count, container = n, true
			if c == 0xde {
				count *= 2
			}
		case c == 0xdd || c == 0xdf: // array32, map32
			n, err := readLen(b, i, 4)
			if err != nil {
				return err
			}
			i += 4
			count, container = n, true
			if c == 0xdf {
				count *= 2
			}
		case c >= 0xc7 && c <= 0xc9, c >= 0xd4 && c <= 0xd8:
			return malformed("extension type 0x%02x at byte %d", c, i-1)
		default: // 0xc1
			return malformed("reserved byte 0x%02x at byte %d", c, i-1)
		}
		rest = uint64(len(b) - i)
		if skip > rest {
			return malformed("length %d at byte %d exceeds the %d bytes left", skip, i, rest)
		}
		i += int(skip)
		if container {
			if count > rest {
				return malformed("container of %d values at byte %d exceeds the %d bytes left", count, i, rest)
			}
			if depth+1 > MaxDepth {
				return malformed("nesting deeper than %d", MaxDepth)
			}
			if count > 0 {
				depth++
				pending[depth] = count
			}
		}
	}
	if i != len(b) {
		return malformed("%d bytes trail the message", len(b)-i)
	}
	return nil
}

func readLen(b []byte, i, size int) (uint64, error) {
	if len(b)-i < size {
		return 0, malformed("truncated length at byte %d", i)
	}
	switch size {
	case 1:
		return uint64(b[i]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b[i:])), nil
	default:
		return uint64(binary.BigEndian.Uint32(b[i:])), nil
	}
}
