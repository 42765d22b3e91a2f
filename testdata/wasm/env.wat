;; The "env" module that imports.wat and tables.wat link against; run
;; unmetered.
(module
  (global (export "base") i32 (i32.const 5))
  (func (export "add") (param i32 i32) (result i32)
    (i32.add (local.get 0) (local.get 1)))
  (func (export "double") (param i32) (result i32)
    (i32.shl (local.get 0) (i32.const 1))))
