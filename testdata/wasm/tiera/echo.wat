;; The smallest Tier A tool module: a bump allocator, and tools that echo
;; their input or return nothing. Used for the end-to-end path and the
;; instantiation benchmarks.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (func (export "stockade_alloc") (param $n i32) (result i32)
    (local $p i32) (local $end i32)
    (local.set $p (global.get $heap))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (if (i32.gt_u (local.get $end) (i32.shl (memory.size) (i32.const 16)))
      (then
        (if (i32.eq
              (memory.grow (i32.sub (i32.add (i32.shr_u (local.get $end) (i32.const 16)) (i32.const 1)) (memory.size)))
              (i32.const -1))
          (then unreachable))))
    (global.set $heap (local.get $end))
    (local.get $p))
  ;; (in_ptr, in_len) -> in_ptr << 32 | in_len
  (func (export "echo") (param $p i32) (param $n i32) (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $p)) (i64.const 32))
      (i64.extend_i32_u (local.get $n))))
  (func (export "noop") (param i32 i32) (result i64)
    (i64.const 0)))
