;; wat2wasm-flags: --enable-tail-call
;; Refused: tail calls, which would unwind frames without the depth limiter
;; seeing them return.
(module
  (func $loop (export "run") (param i32) (result i32)
    (return_call $loop (i32.add (local.get 0) (i32.const 1)))))
