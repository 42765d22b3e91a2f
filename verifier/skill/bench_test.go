package skill

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpen measures verify+open (envelope, Ed25519, the archive's
// SHA-256, the ZIP scan, decompressing and hashing every file, the
// manifest) of the hello skill with its module replaced by one of 1 MiB or
// 8 MiB. SetBytes is the module's size, so MB/s is module bytes verified
// per second. "stored": random bytes, which Build stores; "deflated": bytes
// of 4 bits of entropy each, which deflate to about half (WASM code
// compresses by 2 to 3 times).
//
//	go test -run '^$' -bench BenchmarkOpen ./verifier/skill/
func BenchmarkOpen(b *testing.B) {
	for _, c := range []struct {
		name    string
		size    int
		entropy uint // bits per byte
	}{
		{"1MiB/stored", 1 << 20, 8},
		{"8MiB/stored", 8 << 20, 8},
		{"1MiB/deflated", 1 << 20, 4},
		{"8MiB/deflated", 8 << 20, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			archive, envelope := buildModuleSkill(b, c.size, c.entropy)
			defer b.ReportMetric(float64(len(archive))/float64(c.size), "archive/module")
			accept := acceptOnly(publisherKey)
			b.SetBytes(int64(c.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Open(archive, envelope, accept); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// buildModuleSkill builds the hello skill with a module of size bytes: the
// WASM header, then pseudo-random bytes of the given entropy.
func buildModuleSkill(b *testing.B, size int, entropy uint) (archive, envelope []byte) {
	b.Helper()
	dir := b.TempDir()
	files := helloFiles(b)
	module := make([]byte, size)
	r := rand.New(rand.NewChaCha8([32]byte{1}))
	for i := range module {
		module[i] = byte(r.Uint32() >> (32 - entropy))
	}
	copy(module, files["modules/hello.wasm"][:8])
	for p, data := range map[string][]byte{ManifestPath: files[ManifestPath], "modules/hello.wasm": module} {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	archive, envelope, err := Build(dir, publisherKey)
	if err != nil {
		b.Fatal(err)
	}
	return archive, envelope
}
