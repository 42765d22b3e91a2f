package seccomp

import (
	"testing"
)

// BenchmarkSyscallCost measures what a filter adds to each system call: b.N
// getpid calls, timed in a re-executed child without a filter and in one
// under the profile. ns/op is the filtered figure; unfiltered-ns/op and
// ratio compare; bpf-insns/op is how many filter instructions getpid runs.
// Run it with:
//
//	go test ./seccomp -run '^$' -bench SyscallCost
func BenchmarkSyscallCost(b *testing.B) {
	skipUnlessSeccomp(b)
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			_, prog := namedProgram(b, name, NativeArch())
			_, steps, err := run(prog.insns, Data{Nr: int32(arches[NativeArch()].names["getpid"]), Arch: arches[NativeArch()].audit})
			if err != nil {
				b.Fatal(err)
			}
			var plain, filtered map[string]int64
			runChildJSON(b, "BenchmarkSyscallCost", childSpec{Role: "getpid", N: b.N}, &plain)
			runChildJSON(b, "BenchmarkSyscallCost", childSpec{Role: "getpid", Profile: name, N: b.N}, &filtered)
			without := float64(plain["ns"]) / float64(b.N)
			with := float64(filtered["ns"]) / float64(b.N)
			b.ReportMetric(with, "ns/op")
			b.ReportMetric(without, "unfiltered-ns/op")
			b.ReportMetric(with/without, "ratio")
			b.ReportMetric(float64(steps), "bpf-insns/op")
		})
	}
}
