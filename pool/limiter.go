package pool

import "sync/atomic"

// Limiter bounds the number of requests in flight. TryAcquire never blocks:
// a request over the limit is shed at once. The limit is passed on each call,
// so a reloaded limits.maxInFlight applies to the next request. The zero
// value is ready to use and safe for concurrent use.
type Limiter struct {
	n atomic.Int64
}

// TryAcquire takes a slot when fewer than limit are taken and reports whether
// it did. A limit <= 0 means no limit. Every successful TryAcquire must be
// paired with one Release.
func (l *Limiter) TryAcquire(limit int) bool {
	n := l.n.Add(1)
	if limit > 0 && n > int64(limit) {
		l.n.Add(-1)
		return false
	}
	return true
}

// Release gives back a slot taken by TryAcquire.
func (l *Limiter) Release() { l.n.Add(-1) }

// InFlight returns the number of slots taken.
func (l *Limiter) InFlight() int64 { return l.n.Load() }
