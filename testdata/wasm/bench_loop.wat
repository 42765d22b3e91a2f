;; Loop-heavy benchmark: a tight loop of integer arithmetic, one metered
;; block per iteration.
(module
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $again
      (local.set $acc
        (i32.add
          (i32.mul (local.get $acc) (i32.const 31))
          (i32.xor (local.get $i) (i32.const 0x5bd1e995))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc)))
