;; Memory and numeric instructions for differential tests: data segments,
;; loads and stores with offsets, memory.init/data.drop, small fills and
;; copies, sign extension, saturating truncation, floats.
(module
  (memory (export "memory") 1 4)
  (data (i32.const 16) "stockade")
  (data $tail "\01\02\03\04\05\06\07\08")
  (func (export "bytes") (result i64)
    (memory.init $tail (i32.const 32) (i32.const 0) (i32.const 8))
    (data.drop $tail)
    (memory.copy (i32.const 40) (i32.const 16) (i32.const 8))
    (memory.fill (i32.const 48) (i32.const 0xaa) (i32.const 8))
    (i64.add
      (i64.add (i64.load offset=32 (i32.const 0)) (i64.load (i32.const 40)))
      (i64.load offset=8 (i32.const 40))))
  (func (export "numeric") (param $x i32) (param $f f64) (result i64)
    (i32.store16 offset=2 (i32.const 100) (local.get $x))
    (i64.add
      (i64.add
        (i64.extend_i32_s (i32.extend8_s (local.get $x)))
        (i64.extend16_s (i64.load16_u offset=2 (i32.const 100))))
      (i64.add
        (i64.trunc_sat_f64_s (f64.mul (local.get $f) (f64.const 1e30)))
        (i64.extend_i32_u (i32.trunc_sat_f32_u (f32.demote_f64 (f64.sqrt (f64.abs (local.get $f)))))))))
  (func (export "grow") (param $n i32) (result i32)
    (i32.add (memory.grow (local.get $n)) (i32.mul (memory.size) (i32.const 1000))))
  (func (export "oob") (param $a i32) (result i32)
    (i32.load (local.get $a))))
