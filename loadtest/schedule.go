package main

import "time"

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

// pacer hands out the shots of a schedule at their due times.
type pacer struct {
	sched schedule
	now   func() time.Duration // offset from the start
	sleep func(time.Duration)  // blocks about that long
}

// run sends every shot of the schedule to out, each no earlier than its due
// time, and closes out. It stops early when stop is closed. All shots that
// are due when the pacer wakes go out at once: a pacer that falls behind
// catches up without moving any due time, so the lag shows in the
// latencies and in the late-send count, never hidden.
func (p *pacer) run(out chan<- shot, stop <-chan struct{}) {
	defer close(out)
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
// reading it returned at. It sleeps for the whole wait and again when it
// woke early, and never spins: the timer's wake-up lag (tens of
// microseconds with the precise sleeper) shows in the send's lag, is
// measured from the due time like the rest of the latency, and makes the
// shots due meanwhile go out together on the next wake. A pacer that spun
// through a lead before each due time sent within a few microseconds of it
// but burned a core at every rate: 85 µs of the generator's CPU a request at
// 11,000/s, against 32 µs without the spin (the machine's, which the target
// shares on a small host).
func (p *pacer) waitUntil(due time.Duration) time.Duration {
	now := p.now()
	for now < due {
		p.sleep(due - now)
		now = p.now()
	}
	return now
}
