;; Refused: a module importing the instrumentation's host module itself, to
;; call refill or depth_exceeded directly.
(module
  (import "stockade_meter" "refill" (func $refill))
  (func (export "run") (call $refill)))
