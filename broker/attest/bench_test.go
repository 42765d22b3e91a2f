package attest

import (
	"os"
	"testing"
)

// BenchmarkAttest measures what an attestation costs a call, by step, on
// a Tier C record (about 770 bytes framed):
//
//   - encode: the canonical encoding;
//
//   - sign: Ed25519 over it;
//
//   - append: a whole Log.Append (encode, sign, write, fsync) into a
//     directory under $TMPDIR, so that TMPDIR chooses the disk;
//
//   - append-parallel: the same from GOMAXPROCS goroutines (appends are
//     serialized; this shows the ceiling in calls per second);
//
//   - verify: checking one record's signature and decoding it, what
//     `stockade attest verify` does per record.
//
//     go test -run '^$' -bench BenchmarkAttest ./broker/attest/
func BenchmarkAttest(b *testing.B) {
	k := testKey(b, 1)
	var h Digest
	h[0] = 1
	rec := sealed(allowRecord(0), 2, h, k)
	enc, err := Encode(&rec)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(&rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			k.sign(enc)
		}
	})
	b.Run("append", func(b *testing.B) {
		l := benchLog(b, k)
		b.SetBytes(int64(len(enc) + frameOverhead))
		for b.Loop() {
			if _, err := l.Append(allowRecord(0)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append-parallel", func(b *testing.B) {
		l := benchLog(b, k)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Append(allowRecord(0)); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("verify", func(b *testing.B) {
		sig := k.sign(enc)
		pub := k.Public()
		for b.Loop() {
			if _, err := VerifyRecord(enc, sig, pub); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchLog(b *testing.B, k *Key) *Log {
	dir, err := os.MkdirTemp("", "attest-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	l, err := OpenLog(dir, k, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}
