;; Tools that drive the restricted wasi_snapshot_preview1.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_accept" (func $sock_accept (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_fdstat_get" (func $fd_fdstat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 0x2000))
  (func (export "stockade_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $n)))
    (local.get $p))

  ;; iovec for stderr: "err\n"
  (data (i32.const 0x808) "\00\09\00\00\04\00\00\00")
  (data (i32.const 0x900) "err\n")
  ;; A clock subscription: userdata 42, monotonic, relative 1 ms.
  (data (i32.const 0xa00)
    "\2a\00\00\00\00\00\00\00" "\00\00\00\00\00\00\00\00"
    "\01\00\00\00\00\00\00\00" "\40\42\0f\00\00\00\00\00"
    "\00\00\00\00\00\00\00\00" "\00\00\00\00\00\00\00\00")
  ;; The same for 10 s.
  (data (i32.const 0xa40)
    "\2a\00\00\00\00\00\00\00" "\00\00\00\00\00\00\00\00"
    "\01\00\00\00\00\00\00\00" "\00\e4\0b\54\02\00\00\00"
    "\00\00\00\00\00\00\00\00" "\00\00\00\00\00\00\00\00")

  ;; Writes the input to stdout and "err\n" to stderr, then calls the rest
  ;; of the functions. out (0x1000, 0xc0 bytes):
  ;;   0x00 errnos u32[16]   0x40 nwritten u32  0x44 nread u32
  ;;   0x50 random [16]      0x60 realtime u64  0x68 monotonic u64
  ;;   0x70 argc u32         0x74 argv size u32 0x78 fdstat of fd 1 [24]
  ;;   0x90 nevents u32      0xa0 event [32]
  (func (export "run") (param $p i32) (param $n i32) (result i64)
    (i32.store (i32.const 0x800) (local.get $p))
    (i32.store (i32.const 0x804) (local.get $n))
    (i32.store (i32.const 0x1000) (call $fd_write (i32.const 1) (i32.const 0x800) (i32.const 1) (i32.const 0x1040)))
    (i32.store (i32.const 0x1004) (call $fd_write (i32.const 2) (i32.const 0x808) (i32.const 1) (i32.const 0x1040)))
    (i32.store (i32.const 0x1008) (call $fd_read (i32.const 0) (i32.const 0x800) (i32.const 1) (i32.const 0x1044)))
    (i32.store (i32.const 0x100c) (call $random_get (i32.const 0x1050) (i32.const 16)))
    (i32.store (i32.const 0x1010) (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 0x1060)))
    (i32.store (i32.const 0x1014) (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 0x1068)))
    (i32.store (i32.const 0x1018) (call $args_sizes_get (i32.const 0x1070) (i32.const 0x1074)))
    (i32.store (i32.const 0x101c) (call $fd_prestat_get (i32.const 3) (i32.const 0x1100)))
    (i32.store (i32.const 0x1020)
      (call $path_open (i32.const 3) (i32.const 0) (i32.const 0x900) (i32.const 3) (i32.const 0)
        (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 0x1100)))
    (i32.store (i32.const 0x1024) (call $sock_accept (i32.const 3) (i32.const 0) (i32.const 0x1100)))
    (i32.store (i32.const 0x1028) (call $fd_write (i32.const 3) (i32.const 0x808) (i32.const 1) (i32.const 0x1100)))
    (i32.store (i32.const 0x102c) (call $fd_fdstat_get (i32.const 1) (i32.const 0x1078)))
    (i32.store (i32.const 0x1030)
      (call $poll_oneoff (i32.const 0xa00) (i32.const 0x10a0) (i32.const 1) (i32.const 0x1090)))
    (i32.store (i32.const 0x1034) (call $clock_time_get (i32.const 2) (i64.const 1) (i32.const 0x1100)))
    (i32.store (i32.const 0x1038) (call $fd_write (i32.const 1) (i32.const -8) (i32.const 1) (i32.const 0x1100)))
    (i32.store (i32.const 0x103c) (call $random_get (i32.const -8) (i32.const 16)))
    (i64.const 0x00001000000000c0))

  ;; Writes the input to stdout forever.
  (func (export "write_loop") (param $p i32) (param $n i32) (result i64)
    (i32.store (i32.const 0x800) (local.get $p))
    (i32.store (i32.const 0x804) (local.get $n))
    (loop $again
      (drop (call $fd_write (i32.const 1) (i32.const 0x800) (i32.const 1) (i32.const 0x1040)))
      (br $again))
    (i64.const 0))

  ;; proc_exit(input[0]).
  (func (export "exit") (param $p i32) (param i32) (result i64)
    (call $proc_exit (i32.load8_u (local.get $p)))
    (i64.const 0))

  ;; Sleeps 10 s in poll_oneoff.
  (func (export "sleep") (param i32 i32) (result i64)
    (drop (call $poll_oneoff (i32.const 0xa40) (i32.const 0x10a0) (i32.const 1) (i32.const 0x1090)))
    (i64.const 0)))
