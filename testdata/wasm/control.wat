;; Ordinary control flow for differential tests: br_table, nested blocks,
;; if/else, multi-value blocks and loops with parameters, select, early
;; return, dead code after br/return/unreachable.
(module
  (type $pair (func (param i32 i32) (result i32 i32)))
  (type $count (func (param i32 i32) (result i32)))

  ;; br_table over four cases and a default.
  (func (export "switch") (param $x i32) (result i32)
    (block $default
      (block $c3
        (block $c2
          (block $c1
            (block $c0
              (br_table $c0 $c1 $c2 $c3 $default (local.get $x)))
            (return (i32.const 100)))
          (return (i32.const 101)))
        (return (i32.const 102)))
      (return (i32.const 103)))
    (i32.const -1))

  ;; A multi-value block that swaps its two parameters.
  (func (export "swap") (param $a i32) (param $b i32) (result i32 i32)
    (local.get $a) (local.get $b)
    (block (type $pair) (param i32 i32) (result i32 i32)
      (local.set $a) (local.set $b)
      (local.get $a) (local.get $b)))

  ;; A loop with parameters: sum of 1..n, carried on the stack.
  (func (export "sum") (param $n i32) (result i32)
    (i32.const 0) (local.get $n)
    (loop $again (type $count) (param i32 i32) (result i32)
      (local.set $n)
      (i32.add (local.get $n))
      (local.get $n)
      (i32.sub (local.get $n) (i32.const 1))
      (local.set $n)
      (drop)
      (local.get $n)
      (br_if $again (i32.ne (local.get $n) (i32.const 0)))
      (drop)))

  ;; Nested blocks with branches out of several levels, if/else.
  (func (export "classify") (param $x i32) (result i32)
    (local $r i32)
    (block $out
      (block $small
        (br_if $small (i32.lt_s (local.get $x) (i32.const 10)))
        (if (i32.lt_s (local.get $x) (i32.const 100))
          (then (local.set $r (i32.const 2)) (br $out))
          (else (local.set $r (i32.const 3))))
        (br $out))
      (local.set $r
        (if (result i32) (i32.lt_s (local.get $x) (i32.const 0))
          (then (i32.const 0))
          (else (i32.const 1)))))
    (local.get $r))

  ;; select and typed select.
  (func (export "pick") (param $a i32) (param $b i32) (param $c i32) (result i32)
    (i32.add
      (select (local.get $a) (local.get $b) (local.get $c))
      (select (result i32) (local.get $b) (local.get $a) (local.get $c))))

  ;; Dead code after return, br and unreachable, holding calls and loops.
  (func $helper (param i32) (result i32) (i32.mul (local.get 0) (i32.const 3)))
  (func (export "dead") (param $x i32) (result i32)
    (block $b (result i32)
      (br_if $b (i32.const 7) (i32.eqz (local.get $x)))
      (drop)
      (if (i32.gt_s (local.get $x) (i32.const 5))
        (then
          (return (call $helper (local.get $x)))
          (drop (call $helper (i32.const 1)))
          (loop (br 0))))
      (call $helper (local.get $x))
      (br $b)
      (call $helper (i32.const 9))
      (unreachable)
      (loop (result i32) (i32.const 2))
      (drop))
    (i32.const 1)
    (i32.add))

  ;; Iterative factorial in i64.
  (func (export "fact") (param $n i64) (result i64)
    (local $acc i64)
    (local.set $acc (i64.const 1))
    (block $done
      (loop $again
        (br_if $done (i64.le_u (local.get $n) (i64.const 1)))
        (local.set $acc (i64.mul (local.get $acc) (local.get $n)))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (br $again)))
    (local.get $acc))

  ;; Traps: division by zero and unreachable, reached or not.
  (func (export "div") (param $a i32) (param $b i32) (result i32)
    (i32.div_s (local.get $a) (local.get $b)))
  (func (export "trap_if") (param $x i32)
    (if (local.get $x) (then (unreachable)))))
