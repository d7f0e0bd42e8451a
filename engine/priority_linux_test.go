package engine_test

import (
	"runtime"
	"syscall"
)

// atNice locks the calling goroutine to its thread, for good (the thread
// exits with the goroutine), and sets the thread's nice value to n, as
// serve runs a reload (cmd/bidguard atLowPriority).
func atNice(n int) {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), n)
}
