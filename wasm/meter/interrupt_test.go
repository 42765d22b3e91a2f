package meter

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestInterruptLatency is the regression test for asynchronous interruption
// (research note §4.4): a watchdog on another goroutine lowers limit while
// the guest spins in a loop, or recurses without loops, and the guest must
// stop at its next metered block. It relies on wazero reloading globals at
// loop headers and function entries; an optimisation that hoisted the load
// of limit out of a loop would make it hang. The bound is deliberately
// generous; the measured latency is logged (a few milliseconds at most is
// expected: the guest is between two metered blocks).
func TestInterruptLatency(t *testing.T) {
	cases := []struct {
		module string
		call   call
	}{
		{"loop_infinite", call{"run", nil}},
		{"fib", call{"fib", []uint64{60}}}, // loop-free: no loop header to check at
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			if e.name == "interpreter" && raceEnabled {
				// The interpreter reads globals with Go loads, so the race
				// detector sees Interrupt's store of limit race with them
				// (see Meter.Interrupt). The compiler's loads are native.
				t.Skip("Interrupt during a call races with the interpreter's reads of limit")
			}
			rt := newRuntime(t, e)
			for _, tc := range cases {
				in := mustInstantiate(t, rt, mustInstrument(t, fixture(t, tc.module)), NewMeter(hugeBudget))
				in.meter.Slice = 1 << 40 // no refill on its own: only the interruption stops it
				var fired time.Time
				timer := time.AfterFunc(20*time.Millisecond, func() {
					fired = time.Now()
					in.meter.Interrupt(nil)
				})
				_, err := in.call(t, tc.call.export, tc.call.args...)
				returned := time.Now()
				timer.Stop()
				if kind, _ := Classify(err); kind != KindTimedOut {
					t.Fatalf("%s: %v (%v), want timed out", tc.module, kind, err)
				}
				if !errors.Is(err, ErrTimedOut) {
					t.Errorf("%s: %v does not wrap ErrTimedOut", tc.module, err)
				}
				latency := returned.Sub(fired)
				t.Logf("%s: stopped %v after Interrupt (fuel used %d)", tc.module, latency, in.meter.Used())
				if latency > 2*time.Second {
					t.Errorf("%s: stopped %v after Interrupt", tc.module, latency)
				}
			}
		})
	}
}

// TestInterruptCauses: the context's deadline and cancellation are noticed
// at refill, an interruption before the call stops it at its first block,
// and a cause given to Interrupt is kept.
func TestInterruptCauses(t *testing.T) {
	t.Parallel()
	errWatchdog := errors.New("watchdog: tenant over its share")
	rt := newRuntime(t, engines[0])
	module := mustInstrument(t, fixture(t, "loop_infinite"))

	t.Run("deadline", func(t *testing.T) {
		in := mustInstantiate(t, rt, module, NewMeter(hugeBudget))
		ctx, cancel := context.WithTimeout(in.ctx, 30*time.Millisecond)
		defer cancel()
		in.ctx = ctx
		_, err := in.call(t, "run")
		if kind, _ := Classify(err); kind != KindTimedOut || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v (%v), want timed out wrapping the deadline", kind, err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		in := mustInstantiate(t, rt, module, NewMeter(hugeBudget))
		ctx, cancel := context.WithCancelCause(in.ctx)
		in.ctx = ctx
		time.AfterFunc(10*time.Millisecond, func() { cancel(errWatchdog) })
		_, err := in.call(t, "run")
		if kind, _ := Classify(err); kind != KindInterrupted || !errors.Is(err, errWatchdog) {
			t.Errorf("%v (%v), want interrupted wrapping the cause", kind, err)
		}
	})
	t.Run("before the call", func(t *testing.T) {
		in := mustInstantiate(t, rt, module, NewMeter(hugeBudget))
		in.meter.Interrupt(errWatchdog)
		_, err := in.call(t, "run")
		if kind, _ := Classify(err); kind != KindInterrupted || !errors.Is(err, errWatchdog) {
			t.Errorf("%v (%v), want interrupted wrapping the cause", kind, err)
		}
		if used := in.meter.Used(); used != 1 {
			t.Errorf("used %d, want 1: the first block", used)
		}
	})
	t.Run("host charge after interrupt", func(t *testing.T) {
		in := mustInstantiate(t, rt, module, NewMeter(hugeBudget))
		in.meter.Interrupt(nil)
		if err := in.meter.Charge(1); !errors.Is(err, ErrTimedOut) {
			t.Errorf("Charge after Interrupt: %v", err)
		}
	})
}

// TestNoMeter: an instrumented module run without a Meter in its context
// stops at its first refill instead of running unmetered.
func TestNoMeter(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, engines[0])
	module := mustInstrument(t, fixture(t, "loop_infinite"))
	in := mustInstantiate(t, rt, module, nil)
	_, err := in.call(t, "run")
	if !errors.Is(err, ErrNoMeter) {
		t.Fatalf("%v, want ErrNoMeter", err)
	}
	// A start function needs the Meter during instantiation.
	if _, err := instantiate(t, rt, mustInstrument(t, fixture(t, "start")), nil); !errors.Is(err, ErrNoMeter) {
		t.Fatalf("start without a meter: %v", err)
	}
	// A Meter bound to one instance cannot serve another.
	m := NewMeter(hugeBudget)
	a := mustInstantiate(t, rt, module, m)
	b := mustInstantiate(t, rt, module, NewMeter(hugeBudget))
	b.ctx = a.ctx
	if _, err := b.call(t, "run"); !errors.Is(err, ErrNoMeter) {
		t.Fatalf("another instance's meter: %v", err)
	}
	if err := m.Bind(b.mod); !errors.Is(err, ErrNoMeter) {
		t.Fatalf("rebinding: %v", err)
	}
}
