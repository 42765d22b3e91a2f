;; The probe skill of the system tests (cmd/stockaded tiera_test.go): one
;; tool per attack or capability, JSON in and out. Outputs that report a
;; host result are JSON strings: "ok", "denied", "not_found", "quota",
;; "invalid", "unavailable", "no_handle"; http_* and kv_get return the
;; host's result itself when there is one.
(module
  (import "stockade" "abi_version" (func $abi (result i32)))
  (import "stockade" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "stockade" "handle" (func $handle (param i32 i32 i32) (result i64)))
  (import "stockade" "http_request" (func $http (param i64 i32 i32) (result i64)))
  (import "stockade" "secret_get" (func $secret (param i64) (result i64)))
  (import "stockade" "kv_get" (func $kv_get (param i64 i32 i32) (result i64)))
  (import "stockade" "kv_put" (func $kv_put (param i64 i32 i32 i32 i32) (result i64)))
  (import "stockade" "channel_send" (func $send (param i64 i32 i32) (result i64)))
  (import "stockade" "result_read" (func $read (param i32 i32) (result i32)))
  (memory (export "memory") 4 1024)
  (data (i32.const 0x100) "\"ok\"")          ;; 4
  (data (i32.const 0x110) "\"denied\"")      ;; 8
  (data (i32.const 0x120) "\"not_found\"")   ;; 11
  (data (i32.const 0x130) "\"quota\"")       ;; 7
  (data (i32.const 0x140) "\"invalid\"")     ;; 9
  (data (i32.const 0x150) "\"unavailable\"") ;; 13
  (data (i32.const 0x160) "\"no_handle\"")   ;; 11
  (data (i32.const 0x180) "token")           ;; 5
  (data (i32.const 0x190) "127.0.0.1")       ;; 9
  (data (i32.const 0x1a0) "localhost")       ;; 9
  (data (i32.const 0x1b0) "notify")          ;; 6
  (data (i32.const 0x1c0) "k")               ;; 1
  (data (i32.const 0x1d0) "probe log line")  ;; 14
  (global $heap (mut i32) (i32.const 0x10000))

  (func (export "stockade_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $n)))
    (if (i32.gt_u (global.get $heap) (i32.const 0x18000)) (then unreachable))
    (local.get $p))

  (func $out (param $p i32) (param $n i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $p)) (i64.const 32)) (i64.extend_i32_u (local.get $n))))

  ;; A host result: the result itself when positive, else its name.
  (func $result (param $r i64) (result i64)
    (local $n i32)
    (if (i64.gt_s (local.get $r) (i64.const 0))
      (then
        (local.set $n (call $read (i32.const 0x20000) (i32.const 0x8000)))
        (return (call $out (i32.const 0x20000) (local.get $n)))))
    (if (i64.eqz (local.get $r)) (then (return (call $out (i32.const 0x100) (i32.const 4)))))
    (if (i64.eq (local.get $r) (i64.const -1)) (then (return (call $out (i32.const 0x110) (i32.const 8)))))
    (if (i64.eq (local.get $r) (i64.const -2)) (then (return (call $out (i32.const 0x120) (i32.const 11)))))
    (if (i64.eq (local.get $r) (i64.const -3)) (then (return (call $out (i32.const 0x130) (i32.const 7)))))
    (if (i64.eq (local.get $r) (i64.const -4)) (then (return (call $out (i32.const 0x140) (i32.const 9)))))
    (call $out (i32.const 0x150) (i32.const 13)))

  (func (export "echo") (param $p i32) (param $n i32) (result i64)
    (drop (call $log (i32.const 1) (i32.const 0x1d0) (i32.const 14)))
    (call $out (local.get $p) (local.get $n)))

  (func (export "spin") (param i32 i32) (result i64)
    (loop $l (br $l))
    (i64.const 0))

  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "fib") (param i32 i32) (result i64)
    (drop (call $fib (i32.const 60)))
    (call $out (i32.const 0x100) (i32.const 4)))

  (func $down (param $n i32) (result i32)
    (i32.add (call $down (i32.add (local.get $n) (i32.const 1))) (i32.const 1)))
  (func (export "recurse") (param i32 i32) (result i64)
    (drop (call $down (i32.const 0)))
    (i64.const 0))

  (func (export "grow") (param i32 i32) (result i64)
    (loop $l
      (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable)

  ;; Grows the memory to the call's limit, then fills all of it, forever.
  (func (export "fill") (param i32 i32) (result i64)
    (local $n i32)
    (loop $g
      (br_if $g (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (local.set $n (i32.shl (memory.size) (i32.const 16)))
    (loop $l
      (memory.fill (i32.const 0) (i32.const 0) (local.get $n))
      (br $l))
    (i64.const 0))

  (func (export "guess") (param i32 i32) (result i64)
    (call $result (call $secret (i64.const 0x5eed1234))))

  (func (export "secret") (param i32 i32) (result i64)
    (local $h i64)
    (local.set $h (call $handle (i32.const 2) (i32.const 0x180) (i32.const 5)))
    (if (i64.lt_s (local.get $h) (i64.const 0)) (then (return (call $out (i32.const 0x160) (i32.const 11)))))
    (if (i64.lt_s (call $secret (local.get $h)) (i64.const 0)) (then unreachable))
    (call $out (i32.const 0x100) (i32.const 4)))

  (func $httpTo (param $name i32) (param $p i32) (param $n i32) (result i64)
    (local $h i64)
    (local.set $h (call $handle (i32.const 1) (local.get $name) (i32.const 9)))
    (if (i64.lt_s (local.get $h) (i64.const 0)) (then (return (call $out (i32.const 0x160) (i32.const 11)))))
    (call $result (call $http (local.get $h) (local.get $p) (local.get $n))))
  (func (export "http_ip") (param $p i32) (param $n i32) (result i64)
    (call $httpTo (i32.const 0x190) (local.get $p) (local.get $n)))
  (func (export "http_name") (param $p i32) (param $n i32) (result i64)
    (call $httpTo (i32.const 0x1a0) (local.get $p) (local.get $n)))

  (func $kv (result i64)
    (call $handle (i32.const 3) (i32.const 0) (i32.const 0)))
  (func (export "kv_put") (param $p i32) (param $n i32) (result i64)
    (local $h i64)
    (local.set $h (call $kv))
    (if (i64.lt_s (local.get $h) (i64.const 0)) (then (return (call $out (i32.const 0x160) (i32.const 11)))))
    (call $result (call $kv_put (local.get $h) (i32.const 0x1c0) (i32.const 1) (local.get $p) (local.get $n))))
  (func (export "kv_get") (param i32 i32) (result i64)
    (local $h i64)
    (local.set $h (call $kv))
    (if (i64.lt_s (local.get $h) (i64.const 0)) (then (return (call $out (i32.const 0x160) (i32.const 11)))))
    (call $result (call $kv_get (local.get $h) (i32.const 0x1c0) (i32.const 1))))

  (func (export "notify") (param $p i32) (param $n i32) (result i64)
    (local $h i64)
    (local.set $h (call $handle (i32.const 4) (i32.const 0x1b0) (i32.const 6)))
    (if (i64.lt_s (local.get $h) (i64.const 0)) (then (return (call $out (i32.const 0x160) (i32.const 11)))))
    (call $result (call $send (local.get $h) (local.get $p) (local.get $n))))

  (func (export "flood") (param i32 i32) (result i64)
    (loop $l
      (drop (call $abi))
      (br $l))
    (i64.const 0))
)
