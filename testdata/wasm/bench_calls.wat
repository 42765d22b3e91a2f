;; Call-heavy benchmark: small functions called directly and through a
;; table, from a loop. Metered cost, schedule 1: $add (3) and $mix (5) are
;; hoisted into $step, which costs 7 + 3 + 5 = 15 per call; one iteration
;; of run's loop costs 21 + 15 + (3 or 5, through the table); so run(n)
;; costs 2 (locals) + 36n + 3*ceil(n/2) + 5*floor(n/2) + 1.
(module
  (type $binop (func (param i32 i32) (result i32)))
  (table 2 2 funcref)
  (elem (i32.const 0) $add $mix)
  (func $add (type $binop)
    (i32.add (local.get 0) (local.get 1)))
  (func $mix (type $binop)
    (i32.xor (i32.mul (local.get 0) (i32.const 0x9e3779b1)) (local.get 1)))
  (func $step (param $x i32) (param $i i32) (result i32)
    (call $mix (call $add (local.get $x) (local.get $i)) (local.get $i)))
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $x i32)
    (loop $again
      (local.set $x (call $step (local.get $x) (local.get $i)))
      (local.set $x
        (call_indirect (type $binop)
          (local.get $x) (local.get $i) (i32.and (local.get $i) (i32.const 1))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $x)))
