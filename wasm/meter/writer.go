package meter

// Encoding helpers. They append to a caller's slice, in the manner of
// strconv.AppendInt, so a whole module is written into one growing buffer.

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

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7 // arithmetic shift keeps the sign
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte { return appendULEB(b, uint64(v)) }

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

// appendSection writes a section header and body. The body is passed as
// parts to avoid concatenating them first.
func appendSection(b []byte, id byte, parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b = append(b, id)
	b = appendU32(b, uint32(n))
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
