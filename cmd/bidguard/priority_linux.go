package main

import (
	"runtime"
	"syscall"
)

// reloadNice is the nice value a reload runs at: under contention for the
// cores, the scheduler gives the bid path's threads (nice 0) about ten
// times the CPU of the reload's.
const reloadNice = 10

// atLowPriority runs fn on an OS thread of its own at nice reloadNice (or
// the process's own nice, when higher) and waits for it: the CPU of a
// reload (parsing, compiling, the collection after it) then yields to the
// bid path's threads instead of delaying judgings when the cores are busy
// (engine's BenchmarkRunDuringReload). Linux sets the nice value of one
// thread; the thread ends with fn, since without CAP_SYS_NICE its priority
// cannot be raised back for another goroutine.
func atLowPriority(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		tid := syscall.Gettid()
		// The raw getpriority system call returns 20 - nice.
		if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-p < reloadNice {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, reloadNice)
		}
		fn()
	}()
	<-done
}
