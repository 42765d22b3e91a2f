;; Refused: an export in the instrumentation's reserved namespace.
(module
  (global (export "__stockade_fuel_used") (mut i64) (i64.const 0))
  (func (export "run")))
