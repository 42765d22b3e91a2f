;; Tools that drive the "stockade" host functions from their input, so that
;; the tests choose the calls. Integers in the input and output are
;; little-endian; results are written from 0x10000.
(module
  (import "stockade" "abi_version" (func $abi (result i32)))
  (import "stockade" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "stockade" "handle" (func $handle (param i32 i32 i32) (result i64)))
  (import "stockade" "http_request" (func $http (param i64 i32 i32) (result i64)))
  (import "stockade" "secret_get" (func $secret (param i64) (result i64)))
  (import "stockade" "kv_get" (func $kv_get (param i64 i32 i32) (result i64)))
  (import "stockade" "kv_put" (func $kv_put (param i64 i32 i32 i32 i32) (result i64)))
  (import "stockade" "kv_delete" (func $kv_delete (param i64 i32 i32) (result i64)))
  (import "stockade" "kv_list" (func $kv_list (param i64 i32 i32) (result i64)))
  (import "stockade" "channel_send" (func $send (param i64 i32 i32) (result i64)))
  (import "stockade" "result_read" (func $read (param i32 i32) (result i32)))
  (memory (export "memory") 3)
  (global $heap (mut i32) (i32.const 0x20000))
  (func (export "stockade_alloc") (param $n i32) (result i32)
    (local $p i32) (local $end i32)
    (local.set $p (global.get $heap))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (if (i32.gt_u (local.get $end) (i32.shl (memory.size) (i32.const 16)))
      (then
        (if (i32.eq
              (memory.grow (i32.sub (i32.add (i32.shr_u (local.get $end) (i32.const 16)) (i32.const 1)) (memory.size)))
              (i32.const -1))
          (then unreachable))))
    (global.set $heap (local.get $end))
    (local.get $p))

  ;; out: abi_version() as 4 bytes.
  (func (export "abi") (param i32 i32) (result i64)
    (i32.store (i32.const 0x10000) (call $abi))
    (i64.const 0x0001000000000004))

  ;; in:  kind u32 | op u32 | handle i64 | name_len u32 | a_len u32 | name | a | b
  ;;      handle 0 means: ask handle(kind, name) for one.
  ;;      op: 0 none, 1 http_request(h, a), 2 secret_get(h), 3 kv_get(h, a),
  ;;          4 kv_put(h, a, b), 5 kv_delete(h, a), 6 kv_list(h, a),
  ;;          7 channel_send(h, a)
  ;; out: handle i64 | op result i64 | the result (result_read), if any
  (func (export "do") (param $p i32) (param $n i32) (result i64)
    (local $op i32) (local $h i64) (local $nl i32) (local $al i32)
    (local $name i32) (local $a i32) (local $b i32) (local $bl i32)
    (local $r i64) (local $len i32)
    (local.set $op (i32.load offset=4 (local.get $p)))
    (local.set $h (i64.load offset=8 (local.get $p)))
    (local.set $nl (i32.load offset=16 (local.get $p)))
    (local.set $al (i32.load offset=20 (local.get $p)))
    (local.set $name (i32.add (local.get $p) (i32.const 24)))
    (local.set $a (i32.add (local.get $name) (local.get $nl)))
    (local.set $b (i32.add (local.get $a) (local.get $al)))
    (local.set $bl (i32.sub (i32.add (local.get $p) (local.get $n)) (local.get $b)))
    (if (i64.eqz (local.get $h))
      (then (local.set $h (call $handle (i32.load (local.get $p)) (local.get $name) (local.get $nl)))))
    (if (i32.eq (local.get $op) (i32.const 1))
      (then (local.set $r (call $http (local.get $h) (local.get $a) (local.get $al)))))
    (if (i32.eq (local.get $op) (i32.const 2))
      (then (local.set $r (call $secret (local.get $h)))))
    (if (i32.eq (local.get $op) (i32.const 3))
      (then (local.set $r (call $kv_get (local.get $h) (local.get $a) (local.get $al)))))
    (if (i32.eq (local.get $op) (i32.const 4))
      (then (local.set $r (call $kv_put (local.get $h) (local.get $a) (local.get $al) (local.get $b) (local.get $bl)))))
    (if (i32.eq (local.get $op) (i32.const 5))
      (then (local.set $r (call $kv_delete (local.get $h) (local.get $a) (local.get $al)))))
    (if (i32.eq (local.get $op) (i32.const 6))
      (then (local.set $r (call $kv_list (local.get $h) (local.get $a) (local.get $al)))))
    (if (i32.eq (local.get $op) (i32.const 7))
      (then (local.set $r (call $send (local.get $h) (local.get $a) (local.get $al)))))
    (i64.store (i32.const 0x10000) (local.get $h))
    (i64.store (i32.const 0x10008) (local.get $r))
    (local.set $len (i32.const 16))
    (if (i64.gt_s (local.get $r) (i64.const 0))
      (then
        (local.set $len
          (i32.add (i32.const 16)
            (call $read (i32.const 0x10010)
              (select (i32.wrap_i64 (local.get $r)) (i32.const 0x8000)
                (i64.lt_s (local.get $r) (i64.const 0x8000))))))))
    (i64.or (i64.const 0x0001000000000000) (i64.extend_i32_u (local.get $len))))

  ;; in:  level u32 | count u32 | text
  ;; out: the last log() result as 4 bytes, after logging text count times.
  (func (export "log") (param $p i32) (param $n i32) (result i64)
    (local $i i32) (local $rc i32)
    (block $done
      (loop $again
        (br_if $done (i32.ge_u (local.get $i) (i32.load offset=4 (local.get $p))))
        (local.set $rc
          (call $log (i32.load (local.get $p)) (i32.add (local.get $p) (i32.const 8)) (i32.sub (local.get $n) (i32.const 8))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $again)))
    (i32.store (i32.const 0x10000) (local.get $rc))
    (i64.const 0x0001000000000004))

  ;; in: count u32. Calls abi_version count times.
  (func (export "flood") (param $p i32) (param $n i32) (result i64)
    (local $i i32)
    (block $done
      (loop $again
        (br_if $done (i32.ge_u (local.get $i) (i32.load (local.get $p))))
        (drop (call $abi))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $again)))
    (i64.const 0))

  ;; Pointers and lengths out of bounds, and other malformed arguments.
  ;; out: five results as i64.
  (func (export "bad_args") (param i32 i32) (result i64)
    (i64.store (i32.const 0x10000) (i64.extend_i32_s (call $log (i32.const 1) (i32.const -16) (i32.const 100))))
    (i64.store (i32.const 0x10008) (call $handle (i32.const 2) (i32.const -16) (i32.const 10)))
    (i64.store (i32.const 0x10010) (i64.extend_i32_s (call $read (i32.const -16) (i32.const 16))))
    (i64.store (i32.const 0x10018) (i64.extend_i32_s (call $log (i32.const 1) (i32.const 0) (i32.const -1))))
    (i64.store (i32.const 0x10020) (call $handle (i32.const 99) (i32.const 0) (i32.const 0)))
    (i64.const 0x0001000000000028)))
