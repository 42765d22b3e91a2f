package audit

import (
	"fmt"
	"testing"
)

// BenchmarkAudit measures a whole audit, wazero's compilation included, of
// generated valid modules of 1 MiB and 8 MiB: "data" is 2,000 small functions
// and a passive data segment, "code" is all code (about 1 KiB functions), the
// worst case for compilation. Run: go test -run=^$ -bench=. ./verifier/audit/
func BenchmarkAudit(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		for kind, m := range map[string][]byte{"data": bigModule(size), "code": bigCodeModule(size)} {
			b.Run(fmt.Sprintf("%s/%dMiB", kind, size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(m)))
				for b.Loop() {
					if r := Audit(m, nil, benchLimits()); !r.OK() {
						b.Fatal(r.Failed())
					}
				}
			})
		}
	}
}

// BenchmarkParse measures the section walk alone on the same modules.
func BenchmarkParse(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		m := bigModule(size)
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(len(m)))
			for b.Loop() {
				if _, err := parse(m, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
