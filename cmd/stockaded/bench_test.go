package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
)

// BenchmarkRunTrue measures a call of /bin/true through the whole system
// (client → broker → supervisor → executor → stage 2 → target, and back)
// against a bare fork/exec of /bin/true, the two interleaved in one run so the
// machine's noise hits both. ns/op is the call; bare-ns/op the bare exec;
// ratio is call over bare.
//
//	go test -run '^$' -bench BenchmarkRunTrue -benchtime 300x ./cmd/stockaded
func BenchmarkRunTrue(b *testing.B) {
	s := startSystem(b, "")
	b.Run("client", func(b *testing.B) {
		c, err := client.Dial(s.socket, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		req := &ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/true"}}
		interleave(b, func() {
			if out, err := c.Call(req); err != nil || out.Status != ipc.StatusOK {
				b.Fatalf("%+v %v", out, err)
			}
		})
	})
	b.Run("cli", func(b *testing.B) {
		cli := filepath.Join(binDir, "stockade")
		interleave(b, func() {
			if err := exec.Command(cli, "--socket", s.socket, "run", "--", "/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// interleave times call b.N times, each followed by an untimed bare exec of
// /bin/true whose own time it records, and reports both and their ratio.
func interleave(b *testing.B, call func()) {
	var bare time.Duration
	b.ResetTimer()
	for range b.N {
		call()
		b.StopTimer()
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(t0)
		b.StartTimer()
	}
	b.StopTimer()
	callNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	bareNs := float64(bare.Nanoseconds()) / float64(b.N)
	b.ReportMetric(bareNs, "bare-ns/op")
	b.ReportMetric(callNs/bareNs, "ratio")
}
