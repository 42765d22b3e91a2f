;; An infinite loop with no calls: only fuel or an interruption ends it.
;; Metered: one block per iteration, cost 1 (the br).
(module
  (func (export "run")
    (loop $forever
      (br $forever))))
