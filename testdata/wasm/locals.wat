;; Declared locals cost 1 each at function entry. Metered cost of "run",
;; schedule 1: 10 locals + (local.get local.get i32.add local.set local.get
;; i64.extend_i32_u local.set local.get i64.const i64.add) = 10 + 10 = 20.
(module
  (func (export "run") (param $a i32) (param $b i32) (result i64)
    (local $s i32) (local $w i64) (local f32 f64 i32 i64 f32 f64)
    (local $x externref) (local $y funcref)
    (local.set $s (i32.add (local.get $a) (local.get $b)))
    (local.set $w (i64.extend_i32_u (local.get $s)))
    (i64.add (local.get $w) (i64.const 1))))
