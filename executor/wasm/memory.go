package wasm

import (
	"github.com/tetratelabs/wazero/experimental"
)

// pageSize is the size of a WebAssembly memory page.
const pageSize = 64 << 10

// instanceMemory is the linear memory of one instance: wazero's
// experimental.LinearMemory over a region reserved for the call's memory
// limit. A grow past the limit is refused (memory.grow returns -1 to the
// guest) and remembered, so that a guest that then traps is reported as
// quota_exceeded(memory) rather than as a trap.
//
// A grow past the module's own declared maximum is refused by wazero before
// it reaches the allocator, and is the module's own business: a trap after
// it stays a trap.
type instanceMemory struct {
	r       *region
	limit   uint64 // bytes
	refused bool   // a grow past limit was refused
	freed   bool
}

var _ experimental.LinearMemory = (*instanceMemory)(nil)

// Reallocate implements experimental.LinearMemory. wazero calls it on the
// goroutine running the guest.
func (m *instanceMemory) Reallocate(size uint64) []byte {
	if m.freed {
		return nil
	}
	if size > m.limit {
		m.refused = true
		return nil
	}
	return m.r.slice(size)
}

// Free implements experimental.LinearMemory: wazero calls it when the
// instance closes. The region goes back to the pool, its contents
// discarded.
func (m *instanceMemory) Free() {
	if m.freed {
		return
	}
	m.freed = true
	m.r.release()
}

// allocatorFor returns the allocator that hands mem to the one memory of
// an instance. Tier A modules have exactly one memory (Compile checks it,
// and the meter refuses multi-memory), so it is asked once.
func allocatorFor(mem *instanceMemory) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, _ uint64) experimental.LinearMemory {
		return mem
	})
}
