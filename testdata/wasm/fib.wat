;; Loop-free exponential recursion: fib(n) with two calls per level and no
;; loop anywhere, so a loop-header check (wazero's close-on-context-done)
;; never runs. Metered cost of one activation, schedule 1:
;;   entry block   local.get i32.const i32.lt_u if             = 4
;;   then arm      local.get                                   = 1
;;   else arm      (local.get i32.const i32.sub call) x2 i32.add = 11
;; so fuel(n) = 4 + 1 for n < 2, else 4 + 11 + fuel(n-1) + fuel(n-2).
(module
  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else
        (i32.add
          (call $fib (i32.sub (local.get $n) (i32.const 1)))
          (call $fib (i32.sub (local.get $n) (i32.const 2))))))))
