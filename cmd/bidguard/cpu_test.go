//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time, for benchmarks on a machine shared
// with other work: wall-clock ns/op counts the time spent waiting for a
// core, CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
