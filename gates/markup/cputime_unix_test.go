//go:build unix

package markup

import "syscall"

// processCPU is the CPU time the process has used (user and system, all
// threads: the garbage collector's too), in nanoseconds. On a shared
// machine it measures a benchmark's cost where wall time measures the
// neighbours.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
