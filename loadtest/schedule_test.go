package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScheduleDueTimes(t *testing.T) {
	s := schedule{rate: 2000, duration: time.Second}
	require.Equal(t, time.Duration(0), s.due(0))
	require.Equal(t, 500*time.Microsecond, s.due(1))
	require.Equal(t, 999500*time.Microsecond, s.due(1999))
	require.True(t, s.has(1999))
	require.False(t, s.has(2000), "request 2000 is due at 1s: outside a 1s run")
	require.EqualValues(t, 2000, s.count())

	s.max = 10
	require.EqualValues(t, 10, s.count())
	require.False(t, s.has(10))

	odd := schedule{rate: 3, duration: time.Second}
	require.EqualValues(t, 3, odd.count(), "due at 0, 333ms and 666ms")
}

// fakeClock drives a pacer: sleeps advance time by the requested duration
// plus an oversleep, or by half of it when halfway (a sleep interrupted, as
// by EINTR), and each reading advances it by a microsecond, like the real
// clock.
type fakeClock struct {
	now       time.Duration
	oversleep time.Duration
	halfway   bool
	sleeps    int
	reads     int
}

func (c *fakeClock) sleep(d time.Duration) {
	if c.halfway {
		d /= 2
	}
	c.now += d + c.oversleep
	c.sleeps++
}

func (c *fakeClock) read() time.Duration { c.now += time.Microsecond; c.reads++; return c.now }

func runPacer(t *testing.T, p *pacer) []shot {
	t.Helper()
	out := make(chan shot, 100_000)
	p.run(out, nil)
	var got []shot
	for s := range out {
		got = append(got, s)
	}
	return got
}

func TestPacerSleepsOncePerWait(t *testing.T) {
	clock := &fakeClock{oversleep: 70 * time.Microsecond}
	p := &pacer{sched: schedule{rate: 1000, duration: time.Second}, sleep: clock.sleep, now: clock.read}
	got := runPacer(t, p)
	require.Len(t, got, 1000)
	for i, s := range got {
		require.EqualValues(t, i, s.seq)
		require.Equal(t, p.sched.due(int64(i)), s.due)
	}
	// One sleep and two clock readings a shot (the first is due at once):
	// the pacer does not spin while it waits.
	require.Equal(t, 999, clock.sleeps)
	require.LessOrEqual(t, clock.reads, 2*1000)
}

func TestPacerNeverEarly(t *testing.T) {
	// A sleep cut short halfway: the pacer sleeps again for the rest.
	clock := &fakeClock{halfway: true}
	p := &pacer{sleep: clock.sleep, now: clock.read}
	for _, due := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 2*time.Millisecond + 10} {
		at := p.waitUntil(due)
		require.GreaterOrEqual(t, at, due)
		require.Less(t, at, due+5*time.Microsecond)
	}
}

func TestPacerBatchesWhenItWakesLate(t *testing.T) {
	// 20,000/s is a shot every 50µs; a timer 120µs late wakes after the
	// next two or three are due, and they go out without a sleep each.
	clock := &fakeClock{oversleep: 120 * time.Microsecond}
	p := &pacer{sched: schedule{rate: 20000, duration: 100 * time.Millisecond}, sleep: clock.sleep, now: clock.read}
	got := runPacer(t, p)
	require.Len(t, got, 2000)
	for i, s := range got {
		require.Equal(t, time.Duration(i)*50*time.Microsecond, s.due, "due times stay on the timetable")
	}
	require.Less(t, clock.sleeps, 2000/2, "several shots go out on each wake")
	require.Greater(t, clock.sleeps, 2000/5)
}

func TestPacerCatchesUpWithoutMovingDueTimes(t *testing.T) {
	clock := &fakeClock{}
	p := &pacer{sched: schedule{rate: 1000, duration: 100 * time.Millisecond}, sleep: clock.sleep}
	p.now = clock.read
	clock.now = 50 * time.Millisecond // the pacer starts 50ms behind
	got := runPacer(t, p)
	require.Len(t, got, 100)
	for i, s := range got {
		require.Equal(t, time.Duration(i)*time.Millisecond, s.due, "due times stay on the timetable")
	}
	require.LessOrEqual(t, clock.sleeps, 50, "the 50 shots already due go out without sleeping")
}

func TestPacerStops(t *testing.T) {
	p := &pacer{sched: schedule{rate: 1000, duration: time.Hour}, sleep: func(time.Duration) {}}
	start := time.Now()
	p.now = func() time.Duration { return time.Since(start) }
	out := make(chan shot) // unbuffered, never read
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { p.run(out, stop); close(done) }()
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("pacer did not stop")
	}
	_, open := <-out
	require.False(t, open, "out is closed")
}

func TestLateSendAccounting(t *testing.T) {
	st := newConnStats()
	after := time.Millisecond
	for _, lag := range []time.Duration{0, 500 * time.Microsecond, after, after + 1, 5 * time.Millisecond} {
		st.record(&answer{latUs: 200, lagUs: lag.Microseconds(), late: lag > after, measured: true, status: 200})
	}
	st.record(&answer{latUs: 200, lagUs: 9000, late: true, measured: false, status: 200}) // warmup: not counted
	h, tl := st.collect(newHist(), map[string]int64{})
	require.EqualValues(t, 5, tl.Sent)
	require.EqualValues(t, 2, tl.Late)
	require.EqualValues(t, 5000, tl.LateMaxUs)
	require.EqualValues(t, 5, h.TotalCount())

	require.Empty(t, lateWarning(1, 100, after), "1% late is the limit, not over it")
	require.Contains(t, lateWarning(2, 100, after), "2.0% of sends started more than 1ms after their due time")
	require.Empty(t, lateWarning(0, 0, after))
}

func TestRecordClassifiesAnswers(t *testing.T) {
	st := newConnStats()
	body := []byte(`{"seatbid":[{"bid":[{"id":"ok-1","adid":"ok-1"},{"adid":"bad-floor-2"}]}]}`)
	st.record(&answer{latUs: 100, measured: true, status: 200, body: body})
	st.record(&answer{latUs: 100, measured: true, status: 204})
	st.record(&answer{latUs: 100, measured: true, status: 502})
	st.record(&answer{latUs: 100, measured: true, errKind: errTimeout})
	st.record(&answer{latUs: 2 * histMaxUs, measured: true, errKind: errTimeout})
	st.record(&answer{latUs: 100, measured: false, status: 200, body: body}) // warmup: tags only
	bids := map[string]int64{}
	h, tl := st.collect(newHist(), bids)
	require.EqualValues(t, 5, tl.Completed)
	require.EqualValues(t, 1, tl.OK)
	require.EqualValues(t, 1, tl.NoBid)
	require.EqualValues(t, 3, tl.Failed())
	require.Equal(t, map[int]int64{502: 1}, tl.Status)
	require.Equal(t, map[string]int64{errTimeout: 2}, tl.Errors)
	require.EqualValues(t, 1, tl.Clamped)
	require.Equal(t, map[string]int64{"ok": 2, "bad-floor": 2}, bids)
	require.EqualValues(t, 5, h.TotalCount())

	// The next collection starts a new interval, while tags stay running totals.
	_, tl = st.collect(h, bids)
	require.Zero(t, tl.Completed)
}
