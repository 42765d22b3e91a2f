;; Tools that attack the limits: fuel, depth, memory, bulk memory, traps
;; and the output contract. Each is a tool export (in_ptr, in_len) -> i64.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (func (export "stockade_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $n)))
    (local.get $p))

  ;; An infinite loop: only fuel or the watchdog ends it.
  (func (export "spin") (param i32 i32) (result i64)
    (loop $forever (br $forever))
    (i64.const 0))

  ;; Loop-free exponential recursion: fib(input[0]), returned as 4 bytes.
  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else
        (i32.add
          (call $fib (i32.sub (local.get $n) (i32.const 1)))
          (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "fib") (param $p i32) (param $n i32) (result i64)
    (i32.store (i32.const 0) (call $fib (i32.load8_u (local.get $p))))
    (i64.const 4))

  ;; Unbounded recursion.
  (func $down (call $down))
  (func (export "recurse") (param i32 i32) (result i64)
    (call $down)
    (i64.const 0))

  ;; Grows 1 MiB at a time until memory.grow returns -1, then traps, as a
  ;; language runtime does when its allocator fails.
  (func (export "grow_trap") (param i32 i32) (result i64)
    (loop $again
      (br_if $again (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable)

  ;; The same, but handles the failure: returns the size reached, in pages,
  ;; as 4 bytes.
  (func (export "grow_handled") (param i32 i32) (result i64)
    (loop $again
      (br_if $again (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (i32.store (i32.const 0) (memory.size))
    (i64.const 4))

  ;; Grows memory to 64 MiB, then fills (or copies) all of it, forever.
  (func $to64 (if (i32.eq (memory.grow (i32.sub (i32.const 1024) (memory.size))) (i32.const -1))
    (then unreachable)))
  (func (export "fill") (param i32 i32) (result i64)
    (call $to64)
    (loop $again
      (memory.fill (i32.const 0) (i32.const 7) (i32.const 0x4000000))
      (br $again))
    (i64.const 0))
  (func (export "copy") (param i32 i32) (result i64)
    (call $to64)
    (loop $again
      (memory.copy (i32.const 0) (i32.const 0) (i32.const 0x4000000))
      (br $again))
    (i64.const 0))

  ;; Traps.
  (func (export "trap") (param i32 i32) (result i64)
    unreachable)
  (func (export "oob") (param i32 i32) (result i64)
    (i64.load (i32.const -8)))
  (func (export "div0") (param $p i32) (param $n i32) (result i64)
    (i64.extend_i32_s (i32.div_s (i32.const 1) (local.get $n))))

  ;; Outputs that break the contract: outside memory, or all of it.
  (func (export "output_oob") (param i32 i32) (result i64)
    (i64.const 0xffff000000010000))
  (func (export "output_page") (param i32 i32) (result i64)
    (i64.const 65536)))
