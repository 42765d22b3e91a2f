package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
)

// bareBwrap is the plainest bubblewrap run of /bin/true, the yardstick of
// what namespaces cost on this host.
var bareBwrap = []string{"--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent",
	"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
	"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"}

// BenchmarkRunTrue measures a call of /bin/true through the whole system
// (client → broker → supervisor → executor → stage 2 → target, and back) in
// each isolation mode, against a bare fork/exec of /bin/true and a bare
// `bwrap … /bin/true`, the three interleaved in one run so that the
// machine's noise hits all of them. ns/op is the call; bare-ns/op and
// bwrap-ns/op the yardsticks; x-bare and x-bwrap the ratios.
//
//	go test -run '^$' -bench BenchmarkRunTrue -benchtime 200x ./cmd/stockaded
func BenchmarkRunTrue(b *testing.B) {
	for _, m := range isolationModes {
		b.Run(m.name, func(b *testing.B) {
			s := startSystem(b, m.config+toolsConfig)
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
	}
	b.Run("cli", func(b *testing.B) {
		s := startSystem(b, toolsConfig)
		cli := filepath.Join(binDir, "stockade")
		interleave(b, func() {
			if err := exec.Command(cli, "--socket", s.socket, "run", "--", "/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// interleave times call b.N times, each followed by an untimed bare exec of
// /bin/true and an untimed bare bwrap run, and reports all three and the
// ratios.
func interleave(b *testing.B, call func()) {
	var bare, bw time.Duration
	_, bwErr := exec.LookPath("bwrap")
	b.ResetTimer()
	for range b.N {
		call()
		b.StopTimer()
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(t0)
		if bwErr == nil {
			t0 = time.Now()
			if err := exec.Command("bwrap", bareBwrap...).Run(); err != nil {
				b.Fatal(err)
			}
			bw += time.Since(t0)
		}
		b.StartTimer()
	}
	b.StopTimer()
	callNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	bareNs := float64(bare.Nanoseconds()) / float64(b.N)
	b.ReportMetric(bareNs, "bare-ns/op")
	b.ReportMetric(callNs/bareNs, "x-bare")
	if bwErr == nil {
		bwNs := float64(bw.Nanoseconds()) / float64(b.N)
		b.ReportMetric(bwNs, "bwrap-ns/op")
		b.ReportMetric(callNs/bwNs, "x-bwrap")
	}
}
