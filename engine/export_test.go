package engine

import "time"

// SetClock replaces the real clock for a test and returns the restore
// function.
func SetClock(now func() time.Time) (restore func()) {
	clockNow = now
	return func() { clockNow = time.Now }
}
