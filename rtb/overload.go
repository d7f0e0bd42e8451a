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
//     queued that long is answered 204 at once (shed reason "queue"),
//     until one arrives within the target. A backlog is drained by cheap
//     sheds instead of being served at the edge of its deadline, so the
//     requests admitted keep most of their budget. A busy CPU with short
//     queues sheds nothing.
//   - An adaptive in-flight limit (the governor), driven by two signals
//     read every governorTick:
//     the queue: the mean number of requests inside bidguard's own phases
//     (waiting for a core, read, decoded, judged, written; the time waiting
//     for the bidder excluded), by Little's law the sum of the own time of
//     the tick's answers divided by the tick. It rises with CPU queueing
//     and not with a slow bidder. It sees an overload whose queue forms in
//     the exchange's bounded connection pool, which the queue-time gate
//     cannot: each request then looks fresh when it arrives, but every
//     connection holds one at all times and they wait for a core inside
//     bidguard. While the queue is over queueTarget (two ticks in a row: one
//     long tick may be the process not being run; and on average over the
//     last queueWindow ticks: a slow bidder's answers arriving in waves make
//     bursts of queue that are not an overload) the limit drops in
//     proportion (at most by half a tick), so requests beyond it are
//     answered 204 at once (shed reason "inflight"): a shed costs a small
//     fraction of a served request, the CPU queue empties, and the
//     exchange's connections come back fast enough to drain its own queue.
//     The second signal: answers leaving with too little time to spare
//     when the CPU is saturated (every request waits for a core after its
//     arrival and again after the bidder answers): while more than
//     tightShare of a tick's answers do, the limit drops to 3/4. The limit
//     grows again while neither signal fires. Neither signal starts a cut
//     while the CPUs bidguard can use are mostly idle (cpuMeter: under
//     cpuBusy busy over the last 120 ms). A queue then is a burst, not an
//     overload: a slow bidder's answers arriving in waves, or the exchange's
//     client falling behind and catching up; and tight answers are the
//     bidder's. Shedding would turn auctions into no-bids without freeing
//     anything the other requests wait for. Once the limit is cut it follows
//     the signals alone: its sheds free the CPUs.
//
// The governor is a gradient controller in the spirit of Envoy's adaptive
// concurrency filter and Netflix's concurrency-limits (gradient: the limit
// scaled by target over measured), with two differences. Those measure the
// latency of whole requests against a measured minimum; here that would
// include the bidder's latency, an external quantity that changes on its
// own (a slower bidder would shrink the limit and shed traffic bidguard
// could serve), so the signal is bidguard's own time only, and it is
// compared not with its minimum but with a queue target: those controllers
// keep queueing near zero, which would shed a closed-loop exchange that
// merely keeps every connection busy (its queue is bounded by its
// connections, its latency stays far inside tmax, and a shed there turns an
// auction into a no-bid for nothing). queueTarget sits above the queue of
// the 64 connections an exchange commonly keeps per bidder and below that
// of a pool of 256 whose own queue grows. The queue is a count, not a
// time, so the target holds on a fast or a slow machine alike: the time a
// request waits in a queue of q is q times the cost of a request. What the
// signal cannot tell apart: an exchange with a backlog in a pool of 64
// connections looks like a closed-loop one of 64 (it is not shed), and a
// client sending one request slowly counts as queued from its first byte
// (as for the queue-time gate). The other candidates measured do not
// separate the cases: the run-queue latency's p99 was alike at the
// closed-loop saturation point of 64 connections and under a backlog of
// 256, and requests arrive back to back on every connection in both.
// The Go scheduler's run-queue latency
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
	// queueTarget is the mean number of requests in bidguard's own phases
	// the governor allows (see above).
	queueTarget = 96
	// queueWindow is how many ticks the queue is also averaged over before
	// a cut: a queue over target in a burst shorter than that (a slow
	// bidder's answers arriving in waves) is not an overload.
	queueWindow = 5
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
	// limit and tail are read by every request and written once a tick:
	// they have a cache line of their own, apart from the counters every
	// answer writes.
	limit   atomic.Int64 // 0: not constrained (limits.maxInFlight applies)
	tail    atomic.Int64 // p99 run-queue latency of the last tick, ns
	_       [48]byte
	answers atomic.Int64         // admitted requests answered since the last tick
	tight   atomic.Int64         // of which with less than tightSlack to spare
	own     atomic.Int64         // ns of own time of the requests answered since the last tick
	over    bool                 // the last tick's queue was over queueTarget (controller only)
	busy    float64              // the CPUs' busy share (cpuMeter); 1 when unknown (controller only)
	cpu     cpuMeter             // (controller only)
	recent  [queueWindow]float64 // the last ticks' queues, a ring (controller only)
	ticks   int                  // ticks adjusted (controller only)

	sample []metrics.Sample
	prev   []uint64
}

const schedLatencies = "/sched/latencies:seconds"

func newGovernor() *governor {
	return &governor{sample: []metrics.Sample{{Name: schedLatencies}}, busy: 1, cpu: cpuMeter{src: newCPUSource()}}
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

// spent records the own time of a request bidguard answered: from its
// arrival to its answer, the wait for the bidder excluded.
func (g *governor) spent(own time.Duration) { g.own.Add(int64(own)) }

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
	last := time.Now()
	g.own.Store(0)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// The tick's own time is measured, not assumed: a process not
			// run for a while gets its ticks late and coalesced.
			now := time.Now()
			_, p99 := g.read()
			g.tail.Store(int64(p99))
			q := float64(g.own.Swap(0)) / float64(max(now.Sub(last), time.Millisecond))
			last = now
			if g.ticks%cpuEvery == 0 {
				g.cpu.sample(now)
				share, known := g.cpu.share()
				g.busy = 1
				if known {
					g.busy = share
				}
			}
			g.adjust(g.answers.Swap(0), g.tight.Swap(0), inflight(), int64(ceiling()), q)
		}
	}
}

// adjust is one step of the controller, given the tick's answers, how many
// of them were tight and the tick's queue. When the queue was over
// queueTarget this tick and the one before (one long tick, such as the
// process not being run for a while, is not an overload) and its mean over
// the last queueWindow ticks is too (a burst is not), the limit drops
// to the lower of itself and the requests in flight, scaled by
// queueTarget/queue (at most by half); when more than tightShare of the
// answers were tight, to 3/4 of that (the lower of the two when both
// fire). Neither cut starts from a lifted limit while g.busy is under
// cpuBusy. Otherwise it grows by 1/4 while the queue is under half its
// target, by 1/8 up to it, and is lifted once it reaches the ceiling.
func (g *governor) adjust(answers, tight, inflight, ceiling int64, queue float64) {
	cur := g.limit.Load()
	lifted := cur == 0
	if cur == 0 || (ceiling > 0 && cur > ceiling) {
		cur = ceiling
	}
	factor := 1.0
	if answers >= minAnswers && float64(tight) > tightShare*float64(answers) {
		factor = 0.75
	}
	g.recent[g.ticks%queueWindow] = queue
	g.ticks++
	over := queue > queueTarget
	if over && g.over && g.windowMean() > queueTarget {
		factor = min(factor, max(queueTarget/queue, 0.5))
	}
	g.over = over
	if lifted && g.busy < cpuBusy {
		factor = 1 // room on the CPUs: a burst, not an overload
	}
	next := cur
	switch {
	case factor < 1:
		base := max(inflight, governorFloor)
		if cur > 0 {
			base = min(cur, base)
		}
		next = max(int64(float64(base)*factor), governorFloor)
	case over || cur <= 0:
	case queue < queueTarget/2:
		next = cur + max(cur/4, 1)
	default:
		next = cur + max(cur/8, 1)
	}
	if ceiling > 0 && next >= ceiling {
		next = 0
	}
	g.limit.Store(next)
}

// windowMean is the mean queue of the last queueWindow ticks (the ticks
// before the first count as empty).
func (g *governor) windowMean() float64 {
	sum := 0.0
	for _, q := range g.recent {
		sum += q
	}
	return sum / queueWindow
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
