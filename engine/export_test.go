package engine

import "time"

// SetClock replaces the real clock for a test and returns the restore
// function.
func SetClock(now func() time.Time) (restore func()) {
	clockNow = now
	clockSince = func(t time.Time) time.Duration { return now().Sub(t) }
	return func() { clockNow, clockSince = time.Now, time.Since }
}
