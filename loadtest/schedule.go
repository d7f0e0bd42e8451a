package main

import (
	"runtime"
	"time"
)

// schedule is the open model's timetable: request i is due at offset
// i×interval from the start, for offsets below duration and i below max
// (when max > 0).
type schedule struct {
	rate     float64 // requests per second, > 0
	duration time.Duration
	max      int64
}

// due returns request i's offset from the start.
func (s schedule) due(i int64) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / s.rate)
}

// has reports whether request i is part of the schedule.
func (s schedule) has(i int64) bool {
	return (s.max <= 0 || i < s.max) && s.due(i) < s.duration
}

// count is the number of requests in the schedule.
func (s schedule) count() int64 {
	n := int64(float64(s.duration) * s.rate / float64(time.Second))
	for n > 0 && !s.has(n-1) {
		n--
	}
	for s.has(n) {
		n++
	}
	return n
}

// shot is one request of the open model handed to a connection.
type shot struct {
	seq int64
	due time.Duration // offset from the start
}

// Pacer lead bounds: the pacer aims to wake this much before a due time to
// absorb its own wake-up lag, learned from the lag it observes.
const (
	leadInit = 50 * time.Microsecond
	leadMax  = 500 * time.Microsecond
	// leadTarget is the lag the pacer aims for: slightly late rather than
	// early, since it never hands a request out before its due time.
	leadTarget = 10 * time.Microsecond
)

// pacer hands out the shots of a schedule at their due times.
type pacer struct {
	sched schedule
	now   func() time.Duration // offset from the start
	sleep func(time.Duration)  // blocks about that long
	lead  time.Duration        // current wake-up lead
}

// run sends every shot of the schedule to out, each no earlier than its due
// time, and closes out. It stops early when stop is closed. All shots that
// are due when the pacer wakes go out at once: a pacer that falls behind
// catches up without moving any due time, so the lag shows in the
// latencies and in the late-send count, never hidden.
func (p *pacer) run(out chan<- shot, stop <-chan struct{}) {
	defer close(out)
	if p.lead == 0 {
		p.lead = leadInit
	}
	for i := int64(0); p.sched.has(i); i++ {
		due := p.sched.due(i)
		p.waitUntil(due)
		select {
		case out <- shot{seq: i, due: due}:
		case <-stop:
			return
		}
	}
}

// waitUntil returns at due or soon after (never before), with the clock
// reading it returned at: it sleeps until the lead before due, learns from
// how late it woke, and spins through the rest when it woke early.
func (p *pacer) waitUntil(due time.Duration) time.Duration {
	now := p.now()
	if wait := due - now - p.lead; wait > 0 {
		p.sleep(wait)
		now = p.now()
		p.adjust(now - due)
	}
	for now < due {
		runtime.Gosched()
		now = p.now()
	}
	return now
}

// adjust moves the lead by an eighth of the difference between the observed
// lag (negative when early) and leadTarget, within [0, leadMax].
func (p *pacer) adjust(lag time.Duration) {
	p.lead += (lag - leadTarget) / 8
	p.lead = min(max(p.lead, 0), leadMax)
}
