;; memory.fill and memory.copy of 64 MiB in a loop. Each costs
;; 1 + 64 MiB / 64 = 1,048,577 fuel, so a 10,000,000 budget allows 9.
(module
  (memory (export "memory") 1024)
  (global $done (export "done") (mut i32) (i32.const 0))
  (func (export "fill") (param $n i32)
    (block $out
      (loop $again
        (br_if $out (i32.eqz (local.get $n)))
        (memory.fill (i32.const 0) (global.get $done) (i32.const 0x4000000))
        (global.set $done (i32.add (global.get $done) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $again))))
  (func (export "copy") (param $n i32)
    (block $out
      (loop $again
        (br_if $out (i32.eqz (local.get $n)))
        (memory.copy (i32.const 0) (i32.const 0) (i32.const 0x4000000))
        (global.set $done (i32.add (global.get $done) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $again)))))
