package wasm

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// maxIdleRegions is how many released regions the pool keeps mapped.
const maxIdleRegions = 32

// memoryPool keeps the address-space reservations that back linear
// memories, so that an instantiation costs no mmap and no zeroing by Go
// (research note §0.7). A region is anonymous private memory mapped once
// with MAP_NORESERVE: pages cost nothing until the guest touches them, and
// MADV_DONTNEED on release returns them to the kernel, after which they
// read as zeros. Nothing of one call survives into the next.
type memoryPool struct {
	mu     sync.Mutex
	idle   map[uint64][]*region // by size
	nidle  int
	closed bool
}

func newMemoryPool() *memoryPool {
	return &memoryPool{idle: make(map[uint64][]*region)}
}

// region is one reservation.
type region struct {
	pool    *memoryPool
	mem     []byte // the whole reservation
	touched uint64 // the high-water mark of sizes handed out
}

// reserve returns a region of size bytes (a multiple of the page size).
func (p *memoryPool) reserve(size uint64) (*region, error) {
	p.mu.Lock()
	if list := p.idle[size]; len(list) > 0 {
		r := list[len(list)-1]
		p.idle[size] = list[:len(list)-1]
		p.nidle--
		p.mu.Unlock()
		return r, nil
	}
	p.mu.Unlock()
	if size == 0 {
		return &region{pool: p}, nil
	}
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("wasm: reserving %d bytes of linear memory: %w", size, err)
	}
	return &region{pool: p, mem: mem}, nil
}

// slice returns the first size bytes of the region; size is at most its
// length.
func (r *region) slice(size uint64) []byte {
	if size > r.touched {
		r.touched = size
	}
	return r.mem[:size:size]
}

// release discards the region's contents and returns it to the pool.
func (r *region) release() {
	if len(r.mem) == 0 {
		return
	}
	if r.touched > 0 {
		if err := unix.Madvise(r.mem[:r.touched], unix.MADV_DONTNEED); err != nil {
			// Never reuse memory that may hold a tenant's data.
			_ = unix.Munmap(r.mem)
			return
		}
		r.touched = 0
	}
	p := r.pool
	p.mu.Lock()
	if p.closed || p.nidle >= maxIdleRegions {
		p.mu.Unlock()
		_ = unix.Munmap(r.mem)
		return
	}
	size := uint64(len(r.mem))
	p.idle[size] = append(p.idle[size], r)
	p.nidle++
	p.mu.Unlock()
}

// close unmaps the idle regions; regions in use are unmapped on release.
func (p *memoryPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for size, list := range p.idle {
		for _, r := range list {
			_ = unix.Munmap(r.mem)
		}
		delete(p.idle, size)
	}
	p.nidle = 0
}
