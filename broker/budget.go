package broker

import (
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/policy"
)

// maxRunsTracked bounds the runs whose usage the broker remembers; past it
// the least recently used run is forgotten (its next call starts afresh).
const maxRunsTracked = 10_000

// budgets keeps the limits of runs (calls sharing a run id) and principals
// (peer uids). Calls are charged only when permitted; usage (CPU, output) is
// charged from what the executor measured, after the call.
type budgets struct {
	cfg BudgetConfig

	mu       sync.Mutex
	runs     map[string]*runUsage
	inflight map[uint32]int64
	buckets  map[uint32]*bucket
}

type runUsage struct {
	calls, cpuMillis, outputBytes int64
	last                          time.Time
}

// bucket is a token bucket: RatePerMinute tokens a minute, up to RateBurst.
type bucket struct {
	tokens float64
	last   time.Time
}

func newBudgets(cfg BudgetConfig) *budgets {
	return &budgets{cfg: cfg, runs: map[string]*runUsage{}, inflight: map[uint32]int64{}, buckets: map[uint32]*bucket{}}
}

// refill brings uid's bucket up to now; the caller holds mu.
func (b *budgets) refill(uid uint32, now time.Time) *bucket {
	burst := float64(max(b.cfg.RateBurst, 1))
	bk := b.buckets[uid]
	if bk == nil {
		bk = &bucket{tokens: burst, last: now}
		b.buckets[uid] = bk
	}
	bk.tokens = min(burst, bk.tokens+now.Sub(bk.last).Minutes()*float64(b.cfg.RatePerMinute))
	bk.last = now
	return bk
}

// snapshot is what a call may see of its budgets, for the policy's context.
func (b *budgets) snapshot(run string, uid uint32, now time.Time) policy.Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb := policy.Budget{
		CallsMax: b.cfg.MaxCallsPerRun, InFlight: b.inflight[uid], InFlightMax: b.cfg.MaxConcurrentPerPrincipal,
		CPUMillisMax: b.cfg.MaxCPUSecondsPerRun * 1000, OutputBytesMax: b.cfg.MaxOutputBytesPerRun,
	}
	if u := b.runs[run]; u != nil && run != "" {
		pb.CPUMillisUsed, pb.OutputBytesUsed = u.cpuMillis, u.outputBytes
	}
	if b.cfg.RatePerMinute > 0 {
		pb.RateTokens = int64(b.refill(uid, now).tokens)
	}
	return pb
}

// callsUsed is the calls run has made.
func (b *budgets) callsUsed(run string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u := b.runs[run]; u != nil && run != "" {
		return u.calls
	}
	return 0
}

// admit checks every budget of a permitted call and, if all hold, charges the
// call: one call of its run, one call in flight for its principal, one token.
// release ends the in-flight charge.
func (b *budgets) admit(run string, uid uint32, now time.Time) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var u *runUsage
	if run != "" {
		if u = b.runs[run]; u == nil {
			u = &runUsage{}
		}
		switch c := b.cfg; {
		case c.MaxCallsPerRun > 0 && u.calls >= c.MaxCallsPerRun:
			return nil, ipc.Errorf(ipc.ClassBudgetExceeded, "run %q has made its %d calls", run, c.MaxCallsPerRun)
		case c.MaxCPUSecondsPerRun > 0 && u.cpuMillis >= c.MaxCPUSecondsPerRun*1000:
			return nil, ipc.Errorf(ipc.ClassBudgetExceeded, "run %q has used its %d CPU seconds", run, c.MaxCPUSecondsPerRun)
		case c.MaxOutputBytesPerRun > 0 && u.outputBytes >= c.MaxOutputBytesPerRun:
			return nil, ipc.Errorf(ipc.ClassBudgetExceeded, "run %q has produced its %d output bytes", run, c.MaxOutputBytesPerRun)
		}
	}
	if m := b.cfg.MaxConcurrentPerPrincipal; m > 0 && b.inflight[uid] >= m {
		return nil, ipc.Errorf(ipc.ClassBudgetExceeded, "%d calls of this principal are running already", m)
	}
	if b.cfg.RatePerMinute > 0 {
		bk := b.refill(uid, now)
		if bk.tokens < 1 {
			return nil, ipc.Errorf(ipc.ClassBudgetExceeded, "rate limit: %d calls a minute", b.cfg.RatePerMinute)
		}
		bk.tokens--
	}
	if u != nil {
		u.calls++
		u.last = now
		b.runs[run] = u
		b.evict()
	}
	b.inflight[uid]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.inflight[uid]--; b.inflight[uid] <= 0 {
				delete(b.inflight, uid)
			}
		})
	}, nil
}

// charge adds a finished call's measured usage to its run.
func (b *budgets) charge(run string, out *ipc.Outcome) {
	if run == "" || out == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if u := b.runs[run]; u != nil {
		u.cpuMillis += (out.Usage.UserMicros + out.Usage.SystemMicros) / 1000
		u.outputBytes += int64(len(out.Stdout) + len(out.Stderr))
		if out.Wasm != nil { // a skill's channel messages go to the agent too
			for _, m := range out.Wasm.Messages {
				u.outputBytes += int64(len(m.Body))
			}
		}
	}
}

// evict forgets the least recently used run past maxRunsTracked; the
// caller holds mu.
func (b *budgets) evict() {
	if len(b.runs) <= maxRunsTracked {
		return
	}
	var oldest string
	var at time.Time
	for k, u := range b.runs {
		if oldest == "" || u.last.Before(at) {
			oldest, at = k, u.last
		}
	}
	delete(b.runs, oldest)
}
