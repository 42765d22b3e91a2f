;; Refused: SIMD (a v128 local and 0xFD opcodes).
(module
  (func (export "run") (result i32)
    (i32x4.extract_lane 0 (i32x4.splat (i32.const 7)))))
