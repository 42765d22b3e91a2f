;; Imported functions and a global, so defined function indices start after
;; the imports and calls cross both.
(module
  (import "env" "add" (func $add (param i32 i32) (result i32)))
  (import "env" "base" (global $base i32))
  (import "env" "double" (func $double (param i32) (result i32)))
  (func $twice (param $x i32) (result i32)
    (call $double (call $add (local.get $x) (global.get $base))))
  (func (export "run") (param $x i32) (result i32)
    (call $add (call $twice (local.get $x)) (call $twice (i32.const 1))))
  (export "twice" (func $twice))
  (export "double" (func $double)))
