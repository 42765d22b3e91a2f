;; A start function, which runs during instantiation and so is metered
;; before the embedder can bind its Meter.
(module
  (global $ready (mut i32) (i32.const 0))
  (func $init
    (local $i i32)
    (loop $again
      (global.set $ready (i32.add (global.get $ready) (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 10)))))
  (start $init)
  (func (export "get") (result i32)
    (global.get $ready)))
