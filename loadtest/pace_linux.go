package main

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// preciseSleeper returns a sleep function for the pacing goroutine. Go's
// time.Sleep wakes up to about 1 ms late on Linux (the runtime's poller
// waits in whole milliseconds), which would add up to 1 ms to every latency
// measured from a due time. The pacer instead locks its OS thread, sets the
// thread's timer slack to 1 ns and sleeps with nanosleep(2), which wakes
// within tens of microseconds. Call it from the goroutine that sleeps.
func preciseSleeper() func(time.Duration) {
	runtime.LockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0) // best effort
	return func(d time.Duration) {
		ts := syscall.NsecToTimespec(int64(d))
		_ = syscall.Nanosleep(&ts, nil) // EINTR: waking early is corrected by the caller
	}
}
