;; memory.grow in a loop, past the 64 MiB cap (1024 pages). Each grow of 16
;; pages costs 1 + 16*64 fuel, whether or not it succeeds.
(module
  (memory (export "memory") 1)
  (global $grows (export "grows") (mut i32) (i32.const 0))
  ;; Grows 16 pages (1 MiB) at a time until memory.grow returns -1, then
  ;; returns the size in pages. Metered blocks, schedule 1:
  ;;   entry        block loop                                    = 0
  ;;   loop header  i32.const memory.grow i32.const i32.eq br_if  = 5 (+ 16*64 dynamic)
  ;;   after br_if  global.get i32.const i32.add global.set br    = 5
  ;;   after block  memory.size                                   = 1
  (func (export "grow_until_fail") (result i32)
    (block $done
      (loop $again
        (br_if $done (i32.eq (memory.grow (i32.const 16)) (i32.const -1)))
        (global.set $grows (i32.add (global.get $grows) (i32.const 1)))
        (br $again)))
    (memory.size))
  ;; Keeps asking for more after the cap, forever.
  (func (export "grow_forever")
    (loop $again
      (drop (memory.grow (i32.const 16)))
      (br $again))))
