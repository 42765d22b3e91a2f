//go:build linux

package verifier

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// A tiny WebAssembly encoder for the benchmarks' modules.

func leb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func wsection(id byte, body []byte) []byte {
	return append(append([]byte{id}, leb(uint64(len(body)))...), body...)
}

// codeModule returns a valid module of exactly size bytes, all code:
// functions of about 1 KiB of straight-line instructions (the worst case
// for wazero's compiler), the last padded with nops, one of them exported
// as "hello". It passes the audit with no imports allowed.
func codeModule(size int) []byte {
	c := []byte{}
	for range 340 {
		c = append(c, 0x41, 1, 0x1a) // i32.const 1; drop
	}
	fnBody := func(code []byte) []byte {
		b := append([]byte{0}, code...)
		return append(leb(uint64(len(b))), b...)
	}
	fn := fnBody(append(c, 0x41, 42, 0x0b))
	n := (size - 96) / (len(fn) + 1)
	for pad := 0; pad >= 0; {
		var code, funcs bytes.Buffer
		code.Write(leb(uint64(n + 1)))
		funcs.Write(leb(uint64(n + 1)))
		for range n {
			code.Write(fn)
			funcs.WriteByte(0)
		}
		code.Write(fnBody(append(bytes.Repeat([]byte{0x01}, pad), 0x41, 42, 0x0b)))
		funcs.WriteByte(0)
		export := append(append([]byte{1}, append(leb(5), "hello"...)...), 0, 0)
		m := append([]byte("\x00asm\x01\x00\x00\x00"), wsection(1, []byte{1, 0x60, 0, 1, 0x7f})...)
		m = append(m, wsection(3, funcs.Bytes())...)
		m = append(m, wsection(7, export)...)
		m = append(m, wsection(10, code.Bytes())...)
		switch {
		case len(m) == size:
			return m
		case len(m) > size:
			pad -= len(m) - size
		default:
			pad += size - len(m)
		}
	}
	panic("codeModule: size not reachable")
}

// BenchmarkVerifyAudit measures what install does before it writes
// anything: skill.Open (the envelope, Ed25519, the archive's SHA-256, the ZIP
// scan, every file decompressed and hashed, the manifest) and the WASM
// audit of the module (the section walk and wazero's compilation), for the
// hello skill with a generated all-code module of 1 MiB and 8 MiB (the
// audit's cap). MB/s counts module bytes.
//
//	go test -run '^$' -bench BenchmarkVerifyAudit ./verifier/
func BenchmarkVerifyAudit(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			bl := build(b, variant{module: codeModule(size)})
			archive, sig := readBuilt(b, bl)
			b.SetBytes(int64(size))
			for b.Loop() {
				sk, err := skill.Open(archive, sig, func(skill.Fingerprint) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				if rep, problems := admin.AuditSkill(sk); !rep.OK {
					b.Fatal(problems)
				}
			}
		})
	}
}

// BenchmarkVerify and BenchmarkAudit split BenchmarkVerifyAudit in two.
func BenchmarkVerify(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			archive, sig := readBuilt(b, build(b, variant{module: codeModule(size)}))
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := skill.Open(archive, sig, func(skill.Fingerprint) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAudit(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			sk := build(b, variant{module: codeModule(size)}).sk
			b.SetBytes(int64(size))
			for b.Loop() {
				if rep, problems := admin.AuditSkill(sk); !rep.OK {
					b.Fatal(problems)
				}
			}
		})
	}
}

func readBuilt(b *testing.B, bl built) (archive, sig []byte) {
	b.Helper()
	var err error
	if archive, err = os.ReadFile(bl.archive); err != nil {
		b.Fatal(err)
	}
	if sig, err = os.ReadFile(bl.sig); err != nil {
		b.Fatal(err)
	}
	return archive, sig
}

// BenchmarkResolve measures a resolve end to end over a broker link: the
// store's state, install.Load re-reading and re-hashing every file of the
// release, the sealed memfd, and the broker side's check of its seals and
// digest (ipc.ReadSealed). MB/s counts module bytes.
//
//	go test -run '^$' -bench BenchmarkResolve ./verifier/
func BenchmarkResolve(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			e := newEnv(b, Config{})
			e.mustActivate(e.admin(), build(b, variant{module: codeModule(size)}))
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := e.resolve(helloID, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
