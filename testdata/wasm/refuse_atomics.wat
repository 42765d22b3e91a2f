;; wat2wasm-flags: --enable-threads
;; Refused: atomics (0xFE opcodes) on an unshared memory.
(module
  (memory 1 1)
  (func (export "run") (result i32)
    (i32.atomic.rmw.add (i32.const 0) (i32.const 1))))
