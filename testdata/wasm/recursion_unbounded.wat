;; Unbounded recursion: the depth limiter stops it; unmetered, wazero's own
;; stack ceiling does (after growing its stack to tens of megabytes).
(module
  (func $down (export "run")
    (call $down))
  ;; The same with a frame of 64 locals, so each level costs stack space.
  (func $wide (export "run_wide") (param $x i64) (result i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (i64.add (call $wide (i64.add (local.get $x) (i64.const 1))) (local.get 1))))
