package rtb

import (
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Overload shedding. Three mechanisms keep admitted requests on time when
// the exchange sends more than bidguard can serve:
//
//   - Queue time: a request's deadline D runs from the kernel's receive time
//     of its first bytes (connArrival), so time spent waiting (behind
//     pipelined requests, for a CPU) counts against its budget, and a
//     request whose remaining budget is below minBidderMs is answered 204 at
//     once (shed reason "budget"), before its body is decoded when even
//     maxTmaxMs would not leave enough.
//   - A queue-time gate per connection (queueGate), CoDel's rule with the
//     target set by the deadline: while requests keep reaching the handler
//     after more than a
//     quarter of their T spent queued (behind pipelined requests, in socket
//     buffers, for a CPU) for longer than queueInterval, every request of
//     that connection that
//     queued that long is answered 204 at once (shed reason "inflight"),
//     until one arrives within the target. A backlog is drained by cheap
//     sheds instead of being served at the edge of its deadline, so the
//     requests admitted keep most of their budget. A busy CPU with short
//     queues sheds nothing.
//   - An adaptive in-flight limit (the governor): when the CPU is saturated
//     every request waits for a core, after its arrival and again after the
//     bidder answers, and answers leave late although each was admitted in
//     time. The governor lowers the in-flight limit below limits.maxInFlight
//     while answers leave with too little time to spare, and raises it again
//     while they do not and the limit is what sheds (shed reason
//     "inflight").
//
// The governor is a gradient controller in the spirit of Envoy's adaptive
// concurrency filter and Netflix's concurrency-limits, with one difference:
// those compare the latency of whole requests with a measured minimum,
// which here would be the bidder's latency, an external quantity that
// changes on its own (a slower bidder would shrink the limit and shed
// traffic bidguard could serve), and a busy CPU is not by itself a reason
// to refuse an auction. What matters is the deadline, so the signal is the
// share of admitted requests answered with less than tightSlack before
// their deadline D (late ones included), counted on the bid path and read
// every governorTick. The Go scheduler's run-queue latency
// (runtime/metrics /sched/latencies:seconds) sizes the reserve kept for the
// judging after the bidder answers (schedReserve).
const (
	governorTick = 20 * time.Millisecond
	// tightSlack: an answer leaving less than this before D counts as
	// tight; more than tightShare of a tick's answers tight is overload.
	tightSlack = time.Millisecond
	tightShare = 0.01
	// minAnswers: fewer answers in a tick carry no signal.
	minAnswers = 32
	// schedMinSamples: fewer scheduling events in a tick carry no signal.
	schedMinSamples = 64
	// governorFloor is the lowest limit the governor sets.
	governorFloor = 4
)

// queueInterval is how long queue times must stay over target before the
// queue gate sheds (CoDel's interval, scaled to bid deadlines).
const queueInterval = 20 * time.Millisecond

// queueGate is the queue-time gate of one exchange connection: requests
// pipelined on a connection queue behind each other, so their backlog is
// the connection's own. Used by the connection's goroutine only; the zero
// value admits.
type queueGate struct {
	over time.Time // when the queue time went over target and stayed, + queueInterval; zero: under
}

// admit reports whether a request that queued for queued, of a deadline T,
// may be served at now.
func (q *queueGate) admit(now time.Time, queued, t time.Duration) bool {
	if 4*queued <= t {
		q.over = time.Time{}
		return true
	}
	if q.over.IsZero() {
		q.over = now.Add(queueInterval)
		return true
	}
	return now.Before(q.over)
}

// maxSchedReserve caps the reserve added for the run-queue latency.
const maxSchedReserve = 100 * time.Millisecond

// governor holds the adaptive in-flight limit and the run-queue latency.
// limit and tail are read on every request (atomic loads); the controller
// goroutine writes them.
type governor struct {
	limit   atomic.Int64 // 0: not constrained (limits.maxInFlight applies)
	shed    atomic.Int64 // in-flight sheds since the last tick
	answers atomic.Int64 // admitted requests answered since the last tick
	tight   atomic.Int64 // of which with less than tightSlack to spare
	tail    atomic.Int64 // p99 run-queue latency of the last tick, ns

	sample []metrics.Sample
	prev   []uint64
}

const schedLatencies = "/sched/latencies:seconds"

func newGovernor() *governor {
	return &governor{sample: []metrics.Sample{{Name: schedLatencies}}}
}

// schedReserve is what the bid path keeps, beside deadline.gateReserveMs,
// for the wait for a core once the bidder has answered: twice the p99
// run-queue latency of the last tick (0 on an idle or healthy process),
// capped at maxSchedReserve. Under CPU starvation the bidder gets less time
// and the answer still leaves by D.
func (g *governor) schedReserve() time.Duration {
	return min(2*time.Duration(g.tail.Load()), maxSchedReserve)
}

// answered records the slack of an admitted request's answer: D minus the
// time it left (negative when late).
func (g *governor) answered(slack time.Duration) {
	g.answers.Add(1)
	if slack < tightSlack {
		g.tight.Add(1)
	}
}

// effective is the in-flight limit to apply: the adaptive one when it is
// below the configured one.
func (g *governor) effective(configured int) int {
	if l := g.limit.Load(); l > 0 && (configured <= 0 || l < int64(configured)) {
		return int(l)
	}
	return configured
}

// run adjusts the limit every governorTick until stop is closed. inflight
// reads the requests in flight, ceiling the configured limits.maxInFlight.
func (g *governor) run(stop <-chan struct{}, inflight func() int64, ceiling func() int) {
	t := time.NewTicker(governorTick)
	defer t.Stop()
	g.read() // the first read sets the baseline
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_, p99 := g.read()
			g.tail.Store(int64(p99))
			g.adjust(g.answers.Swap(0), g.tight.Swap(0), inflight(), int64(ceiling()))
		}
	}
}

// adjust is one step of the controller, given the tick's answers and how
// many of them were tight: when more than tightShare were, the limit drops
// to 3/4 of the lower of itself and the requests in flight; otherwise, and
// only while the limit is what sheds, it grows by 1/8.
func (g *governor) adjust(answers, tight, inflight, ceiling int64) {
	shed := g.shed.Swap(0)
	cur := g.limit.Load()
	if cur == 0 || (ceiling > 0 && cur > ceiling) {
		cur = ceiling
	}
	next := cur
	switch {
	case answers >= minAnswers && float64(tight) > tightShare*float64(answers):
		base := max(inflight, governorFloor)
		if cur > 0 {
			base = min(cur, base)
		}
		next = max(base*3/4, governorFloor)
	case shed > 0 && cur > 0:
		next = cur + max(cur/8, 1)
	}
	if ceiling > 0 && next >= ceiling {
		next = 0
	}
	g.limit.Store(next)
}

// read returns the 90th and 99th percentiles of the run-queue latency since
// the last call (0 when too few goroutines were scheduled to tell).
func (g *governor) read() (p90, p99 time.Duration) {
	metrics.Read(g.sample)
	if g.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	h := g.sample[0].Value.Float64Histogram()
	if len(g.prev) != len(h.Counts) {
		g.prev = append(g.prev[:0], h.Counts...)
		return 0, 0
	}
	var total uint64
	for i, c := range h.Counts {
		total += c - g.prev[i]
	}
	if total >= schedMinSamples {
		p90 = quantile(h, g.prev, total-total/10)
		p99 = quantile(h, g.prev, total-total/100)
	}
	copy(g.prev, h.Counts)
	return p90, p99
}

// quantile returns the upper bound of the bucket holding the want-th
// scheduling event since prev.
func quantile(h *metrics.Float64Histogram, prev []uint64, want uint64) time.Duration {
	seen := uint64(0)
	for i, c := range h.Counts {
		seen += c - prev[i]
		if seen >= want {
			if ub := h.Buckets[i+1]; ub < 1 {
				return time.Duration(ub * float64(time.Second))
			}
			return time.Second // the last bucket is unbounded
		}
	}
	return 0
}
