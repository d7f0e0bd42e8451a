//go:build !linux

package main

import "time"

// preciseSleeper returns time.Sleep where nanosleep with a small timer slack
// is not available: sends then leave up to the timer's lag (about 1 ms)
// after their due times, and the lag counts in their latencies.
func preciseSleeper() func(time.Duration) { return time.Sleep }
