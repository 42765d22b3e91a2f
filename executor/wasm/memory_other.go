//go:build !linux

package wasm

// memoryPool backs linear memories with the Go heap where the pooled
// mmap'd reservations of memory_linux.go are not implemented (madvise does
// not promise zero-filled pages everywhere).
type memoryPool struct{}

func newMemoryPool() *memoryPool { return &memoryPool{} }

// region is a growable heap buffer of at most max bytes.
type region struct {
	mem []byte
	max uint64
}

func (p *memoryPool) reserve(size uint64) (*region, error) {
	return &region{max: size}, nil
}

func (r *region) slice(size uint64) []byte {
	if size > uint64(cap(r.mem)) {
		c := max(size, 2*uint64(cap(r.mem)))
		c = min(c, r.max)
		mem := make([]byte, size, c)
		copy(mem, r.mem)
		r.mem = mem
	}
	r.mem = r.mem[:size]
	return r.mem[:size:size]
}

func (r *region) release() { r.mem = nil }

func (p *memoryPool) close() {}
