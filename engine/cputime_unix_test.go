//go:build unix

package engine_test

import "syscall"

// processCPU is the process's user and system CPU time in nanoseconds:
// benchmarks report it per operation, a figure that, unlike ns/op, does
// not grow when other processes share the cores.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
