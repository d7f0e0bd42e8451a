//go:build unix

package quarantine

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds cpu-ns/op, the process's CPU time per op over the timed
// loop: on a machine shared with other work, wall-clock ns/op counts the
// time the benchmark waited for a core; CPU time does not.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
