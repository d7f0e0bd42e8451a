//go:build !linux

package main

import "time"

// preciseSleeper returns time.Sleep where nanosleep with a small timer slack
// is not available; the pacer's lead correction absorbs its constant lag.
func preciseSleeper() func(time.Duration) { return time.Sleep }
