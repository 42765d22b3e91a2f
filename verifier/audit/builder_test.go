package audit

import "bytes"

// A tiny WebAssembly encoder for tests: just enough to build valid modules
// and modules that break one rule each.

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func str(s string) []byte { return cat(uleb(uint64(len(s))), []byte(s)) }

// vec is a vector: the count, then the items.
func vec(items ...[]byte) []byte { return cat(uleb(uint64(len(items))), cat(items...)) }

func repeat(n int, item []byte) []byte {
	items := make([][]byte, n)
	for i := range items {
		items[i] = item
	}
	return vec(items...)
}

func section(id byte, body ...[]byte) []byte {
	b := cat(body...)
	return cat([]byte{id}, uleb(uint64(len(b))), b)
}

func wasm(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

// typeI32 is the one function type the builders use: () -> i32.
func typeI32() []byte { return section(secType, vec([]byte{0x60, 0x00, 0x01, 0x7f})) }

// funcs declares n functions of type 0.
func funcs(n int) []byte { return section(secFunction, repeat(n, []byte{0})) }

// body is a function body with no locals.
func body(code ...byte) []byte {
	b := cat([]byte{0}, code)
	return cat(uleb(uint64(len(b))), b)
}

// ret42 is "i32.const 42; end".
func ret42() []byte { return body(0x41, 42, 0x0b) }

func code(bodies ...[]byte) []byte { return section(secCode, vec(bodies...)) }

func memory(limits ...byte) []byte { return section(secMemory, vec(limits)) }

func funcImport(mod, name string) []byte {
	return cat(str(mod), str(name), []byte{kindFunc, 0})
}

func export(name string, idx int) []byte { return cat(str(name), []byte{0}, uleb(uint64(idx))) }

func custom(name string, payload []byte) []byte { return section(secCustom, str(name), payload) }

// passive is a passive data segment.
func passive(data []byte) []byte { return cat([]byte{1}, uleb(uint64(len(data))), data) }

// valid is a small module that passes the audit: one function, exported,
// and a bounded memory.
func valid() []byte {
	return wasm(typeI32(), funcs(1), memory(1, 1, 2), section(secExport, vec(export("run", 0))), code(ret42()))
}

// bigModule returns a valid module of exactly size bytes: 2,000 small
// functions and one passive data segment making up the rest.
func bigModule(size int) []byte {
	bodies := make([][]byte, 2000)
	for i := range bodies {
		// i32.const 1 (i32.const 2 i32.add)*10 end
		c := []byte{0x41, 1}
		for range 10 {
			c = append(c, 0x41, 2, 0x6a)
		}
		bodies[i] = body(append(c, 0x0b)...)
	}
	head := cat(typeI32(), funcs(len(bodies)), memory(1, 1, 16), code(bodies...))
	n := size
	for range 10 {
		m := wasm(head, section(secData, vec(passive(make([]byte, n)))))
		switch {
		case len(m) == size:
			return m
		case len(m) > size:
			n -= len(m) - size
		default:
			n += size - len(m)
		}
	}
	panic("bigModule: size not reachable")
}

// bigCodeModule returns a valid module of exactly size bytes made of code:
// functions of about 1 KiB of straight-line instructions, the last one
// padded with nops to reach the size.
func bigCodeModule(size int) []byte {
	c := []byte{}
	for range 340 {
		c = append(c, 0x41, 1, 0x1a) // i32.const 1; drop
	}
	fn := body(append(c, 0x41, 42, 0x0b)...)
	n := (size - 64) / (len(fn) + 1) // a body and its type index
	bodies := make([][]byte, n+1)
	for i := range n {
		bodies[i] = fn
	}
	pad := 0
	for range 10 {
		bodies[n] = body(append(bytes.Repeat([]byte{0x01}, pad), 0x41, 42, 0x0b)...)
		m := wasm(typeI32(), funcs(len(bodies)), code(bodies...))
		switch {
		case len(m) == size:
			return m
		case len(m) > size:
			pad -= len(m) - size
		default:
			pad += size - len(m)
		}
		if pad < 0 {
			break
		}
	}
	panic("bigCodeModule: size not reachable")
}
