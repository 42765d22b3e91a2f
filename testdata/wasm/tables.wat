;; Tables for differential tests: call_indirect through an active element
;; segment, passive and declarative segments with ref.func expressions, a
;; global initialised with ref.func, and the table instructions.
(module
  (type $unop (func (param i32) (result i32)))
  (import "env" "double" (func $double (param i32) (result i32)))
  (table $t (export "table") 4 16 funcref)
  (table $u 2 2 externref)
  (global $g (export "first") funcref (ref.func $inc))
  (elem (table $t) (i32.const 0) func $inc $dec)
  (elem $passive funcref (ref.func $sq) (ref.func $double) (ref.null func))
  (elem declare func $neg)

  (func $inc (type $unop) (i32.add (local.get 0) (i32.const 1)))
  (func $dec (type $unop) (i32.sub (local.get 0) (i32.const 1)))
  (func $sq (type $unop) (i32.mul (local.get 0) (local.get 0)))
  (func $neg (type $unop) (i32.sub (i32.const 0) (local.get 0)))

  ;; Calls slot i with x.
  (func (export "dispatch") (param $i i32) (param $x i32) (result i32)
    (call_indirect $t (type $unop) (local.get $x) (local.get $i)))

  ;; Copies the passive segment into slots 2..4 (after growing the table),
  ;; stores $neg and the global's function, and reports on the table.
  (func (export "setup") (result i32)
    (drop (table.grow $t (ref.null func) (i32.const 4)))
    (table.init $t $passive (i32.const 2) (i32.const 0) (i32.const 3))
    (elem.drop $passive)
    (table.set $t (i32.const 5) (ref.func $neg))
    (table.set $t (i32.const 6) (global.get $g))
    (table.copy $t $t (i32.const 7) (i32.const 0) (i32.const 1))
    (table.fill $t (i32.const 8) (ref.func $dec) (i32.const 2))
    (i32.add
      (i32.mul (table.size $t) (i32.const 100))
      (ref.is_null (table.get $t (i32.const 4)))))

  ;; externref table: store and test a null.
  (func (export "externs") (result i32)
    (table.set $u (i32.const 1) (ref.null extern))
    (ref.is_null (table.get $u (i32.const 1)))))
