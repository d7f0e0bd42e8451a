package rtb

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"

	"github.com/bidguard/bidguard/engine"
)

// outcome is a request's bidguard_requests_total{outcome}.
type outcome uint8

const (
	outBid outcome = iota
	outFiltered
	outNoBid
	outRejected
	outBadRequest
	outTooLarge
	outShed
	outUpstreamError
	outPanic
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"bid", "filtered", "no_bid", "rejected", "bad_request", "too_large", "shed", "upstream_error", "panic"}

// errKind is an upstream failure's bidguard_upstream_errors_total{kind}.
type errKind uint8

const (
	kindTimeout errKind = iota
	kindConnect
	kindReset
	kindHTTPStatus
	kindBadJSON
	kindTooLarge
	kindDecompress
	kindRedirect
	kindBadEncoding
	kindTLS // the TLS handshake failed
	numKinds
)

var kindNames = [numKinds]string{"timeout", "connect", "reset", "http_status", "bad_json", "too_large", "decompress", "redirect", "bad_encoding", "tls"}

type shedReason uint8

const (
	shedBudget shedReason = iota
	shedInflight
	shedShutdown
	shedDeadline
	shedBreaker // the upstream's circuit breaker is open
	shedQueue   // the connection's queue-time gate
	numShed
)

var shedNames = [numShed]string{"budget", "inflight", "shutdown", "deadline", "breaker", "queue"}

// closeReason is why a pooled upstream connection was closed instead of
// reused: bidguard_upstream_conns_closed_total{reason}.
type closeReason uint8

const (
	closedIdle  closeReason = iota // idle longer than upstreams[].idleTimeoutMs
	closedStale                    // found closed by the bidder before reuse
	closedStray                    // bytes the bidder sent outside an answer
	numCloseReasons
)

var closeReasonNames = [numCloseReasons]string{"idle", "stale", "stray"}

// clientMeters are the upstream clients' series, shared by every pool.
type clientMeters struct {
	closed [numCloseReasons]*metrics.Counter
}

// stage is where in the bid path a request is, for
// bidguard_panics_total{where}.
type stage uint8

const (
	stageHandler stage = iota
	stageGate
	stageUpstream
	stageAudit
	numStages
)

var stageNames = [numStages]string{"handler", "gate", "upstream", "audit"}

// Label values that come from neither a config key nor a fixed list.
const (
	// seatOther labels bids of seats with no seat policy.
	seatOther = "other"
	// upstreamNone labels requests routed to no upstream (404, 405 on an
	// unrouted path, unparsable requests).
	upstreamNone = "none"
)

// meters holds the bid path's metrics. It lives as long as the Server: a
// reload resolves the new snapshot's label values against the same Set, so
// counters carry on across reloads. Metrics are created only when a snapshot
// is installed, except bids_rejected_total and bids_skipped_total, whose nbr
// and why labels are the gates' fixed codes: each (seat, gate, nbr) or
// (gate, why) series is created the first time it occurs, from label values
// that are all config keys or gate constants, never request data.
type meters struct {
	set    *metrics.Set
	shed   [numShed]*metrics.Counter
	panics [numStages]*metrics.Counter
	none   *upstreamMeters
	client clientMeters
	// logSuppressed counts rejection log lines over log.rejectionsPerSecond.
	logSuppressed *metrics.Counter

	// The exchange listener: accept errors retried, connections closed
	// over limits.maxConns (the open count is a gauge, see connections).
	acceptErrors, connsRefused *metrics.Counter

	rejected counterMap[rejectedKey]
	skipped  counterMap[skippedKey]

	// judged counts judged responses, for sampling gate durations.
	judged atomic.Uint64

	// The duration histograms, written after the set's series.
	upstreamDur, gateDur, handshakeDur *histFamily
	hists                              []*histFamily

	// help holds the # HELP texts of families callers register in set.
	helpMu sync.Mutex
	help   map[string]string
}

type rejectedKey struct {
	seat, gate string
	nbr        int
}

type skippedKey struct{ gate, why string }

// upstreamMeters are one upstream's series.
type upstreamMeters struct {
	requests [numOutcomes]*metrics.Counter
	errors   [numKinds]*metrics.Counter
	duration *histogram
	// resends counts requests sent once more on a new connection.
	resends *metrics.Counter
}

// seatMeters are bidguard_bids_total for one seat label.
type seatMeters struct {
	label                    string
	passed, rejected, warned *metrics.Counter
}

func newMeters() *meters {
	m := &meters{
		set:          metrics.NewSet(),
		upstreamDur:  newHistFamily("bidguard_upstream_duration_seconds", "upstream", upstreamBuckets),
		gateDur:      newHistFamily("bidguard_gate_duration_seconds", "gate", gateBuckets),
		handshakeDur: newHistFamily("bidguard_upstream_tls_handshake_seconds", "upstream", upstreamBuckets),
		help:         map[string]string{},
	}
	m.hists = []*histFamily{m.gateDur, m.upstreamDur, m.handshakeDur}
	for i := range m.shed {
		m.shed[i] = m.set.GetOrCreateCounter(series("bidguard_shed_total", "reason", shedNames[i]))
	}
	for i := range m.panics {
		m.panics[i] = m.set.GetOrCreateCounter(series("bidguard_panics_total", "where", stageNames[i]))
	}
	for i := range m.client.closed {
		m.client.closed[i] = m.set.GetOrCreateCounter(series("bidguard_upstream_conns_closed_total", "reason", closeReasonNames[i]))
	}
	m.logSuppressed = m.set.GetOrCreateCounter("bidguard_rejection_log_suppressed_total")
	m.none = m.upstream(upstreamNone)
	m.acceptErrors = m.set.GetOrCreateCounter("bidguard_accept_errors_total")
	m.connsRefused = m.set.GetOrCreateCounter("bidguard_connections_refused_total")
	return m
}

// buildInfo registers bidguard_build_info{version,revision,goversion} = 1.
func (m *meters) buildInfo(version, revision string) {
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	m.set.GetOrCreateGauge(series("bidguard_build_info", "version", version, "revision", revision, "goversion", runtime.Version()),
		func() float64 { return 1 })
}

// inflightLimit registers bidguard_inflight_limit: the in-flight limit in
// force, limits.maxInFlight or the governor's lower one.
func (m *meters) inflightLimit(limit func() float64) {
	m.set.GetOrCreateGauge("bidguard_inflight_limit", limit)
}

// connections registers bidguard_connections_open, read from open.
func (m *meters) connections(open func() float64) {
	m.set.GetOrCreateGauge("bidguard_connections_open", open)
}

// series builds `name{k1="v1",k2="v2"}` with escaped values.
func series(name string, kv ...string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		for _, r := range kv[i+1] {
			switch r {
			case '\\':
				b.WriteString(`\\`)
			case '"':
				b.WriteString(`\"`)
			case '\n':
				b.WriteString(`\n`)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func (m *meters) upstream(name string) *upstreamMeters {
	u := &upstreamMeters{}
	for i := range u.requests {
		u.requests[i] = m.set.GetOrCreateCounter(series("bidguard_requests_total", "upstream", name, "outcome", outcomeNames[i]))
	}
	for i := range u.errors {
		u.errors[i] = m.set.GetOrCreateCounter(series("bidguard_upstream_errors_total", "upstream", name, "kind", kindNames[i]))
	}
	u.duration = m.upstreamDur.get(name)
	u.resends = m.set.GetOrCreateCounter(series("bidguard_upstream_resends_total", "upstream", name))
	return u
}

func (m *meters) seat(label string) *seatMeters {
	c := func(v string) *metrics.Counter {
		return m.set.GetOrCreateCounter(series("bidguard_bids_total", "seat", label, "verdict", v))
	}
	return &seatMeters{label: label, passed: c("passed"), rejected: c("rejected"), warned: c("warned")}
}

func (m *meters) gate(name string) *histogram { return m.gateDur.get(name) }

func (m *meters) rejectedCounter(seat, gate string, nbr int) *metrics.Counter {
	k := rejectedKey{seat, gate, nbr}
	if c := m.rejected.load(k); c != nil {
		return c
	}
	return m.rejected.create(k, series("bidguard_bids_rejected_total", "seat", seat, "gate", gate, "nbr", strconv.Itoa(nbr)), m.set)
}

func (m *meters) skippedCounter(gate, why string) *metrics.Counter {
	k := skippedKey{gate, why}
	if c := m.skipped.load(k); c != nil {
		return c
	}
	return m.skipped.create(k, series("bidguard_bids_skipped_total", "gate", gate, "why", why), m.set)
}

// counterMap holds counters created on first use, by key. A lookup of a
// counter that exists is a map read behind an atomic load, with no lock and
// no write to memory other requests share (an RWMutex's read lock is an
// atomic add on one cache line for every core); a new key copies the map
// under mu (series are few and made once). The zero value is empty.
type counterMap[K comparable] struct {
	cur atomic.Pointer[map[K]*metrics.Counter]
	mu  sync.Mutex
}

// load returns the counter of k, nil when there is none yet.
func (c *counterMap[K]) load(k K) *metrics.Counter {
	if m := c.cur.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// create returns the counter of k, creating the series name in set unless
// a concurrent create made it first.
func (c *counterMap[K]) create(k K, name string, set *metrics.Set) *metrics.Counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cur.Load()
	n := 0
	if old != nil {
		if v := (*old)[k]; v != nil {
			return v
		}
		n = len(*old)
	}
	next := make(map[K]*metrics.Counter, n+1)
	if old != nil {
		for key, v := range *old {
			next[key] = v
		}
	}
	v := set.GetOrCreateCounter(name)
	next[k] = v
	c.cur.Store(&next)
	return v
}

// snapMeters are the series a snapshot's label values resolve to.
type snapMeters struct {
	seats    map[string]*seatMeters // by seat policy key and operator-quarantined seat
	other    *seatMeters
	gates    map[string]*histogram // by result name
	hasSeats bool
}

func (m *meters) forSnapshot(snap *engine.Snapshot) *snapMeters {
	sm := &snapMeters{seats: map[string]*seatMeters{}, other: m.seat(seatOther), gates: map[string]*histogram{}}
	for _, p := range snap.Policies() {
		if p != snap.Default {
			sm.seats[p.Key] = m.seat(p.Key)
		}
		for _, g := range p.Gates {
			if sm.gates[g.Name] == nil {
				sm.gates[g.Name] = m.gate(g.Name)
			}
		}
	}
	for seat := range snap.Operator {
		if sm.seats[seat] == nil {
			sm.seats[seat] = m.seat(seat)
		}
	}
	sm.hasSeats = len(sm.seats) > 0
	return sm
}

// seatOf returns the seat label of bid i: its seat policy's key, an
// operator-quarantined seat as sent, else "other".
func (sm *snapMeters) seatOf(snap *engine.Snapshot, ev *engine.Eval, i int) *seatMeters {
	if !sm.hasSeats {
		return sm.other
	}
	if p := ev.Out.Bids[i].Policy; p != snap.Default {
		if s := sm.seats[p.Key]; s != nil {
			return s
		}
	}
	if s := sm.seats[ev.In.Bids[i].Seat]; s != nil && snap.Operator[ev.In.Bids[i].Seat] {
		return s
	}
	return sm.other
}

// gateSampleEvery is how often gate durations are measured and observed:
// for the first judged response and then one in gateSampleEvery; the others
// run without a clock reading per gate (RunOptions.TimeGates). A histogram
// update is a binary search over the bounds and two atomic adds on shared
// cache lines, 60-75 ns from two cores (BenchmarkHistogramObserve; the
// library's log-bucket histogram with its mutex took 115-215 ns), and a
// policy has some twenty gates: observing every response would cost more
// than a microsecond per request, sampled it costs a sixteenth of that. The
// distribution is unbiased; bidguard_gate_duration_seconds_count counts the
// sampled responses, not all of them.
const gateSampleEvery = 16

// timeGates reports whether the next judged response is one whose gate
// durations are measured.
func (m *meters) timeGates() bool { return (m.judged.Add(1)-1)%gateSampleEvery == 0 }

// record counts one judged response: bids by seat and verdict, rejections by
// seat, gate and nbr, per-bid skips, and gate durations when the run timed
// them (sampled: timeGates). It allocates nothing once every series it
// touches exists.
func (m *meters) record(snap *engine.Snapshot, sm *snapMeters, ev *engine.Eval, out *engine.Outcome) {
	if out.Timed {
		for i := range out.Gates {
			r := &out.Gates[i]
			if r.Skipped && r.LatencyNs == 0 {
				continue
			}
			if h := sm.gates[r.Name]; h != nil {
				h.observeNs(r.LatencyNs)
			}
		}
	}
	for _, sk := range out.Skips {
		m.skippedCounter(sk.Gate, sk.Why).Inc()
	}
	resp := &out.Response
	if ev.Info().TooManyBids {
		n := ev.Info().BidCount
		if resp.Rejected() {
			sm.other.rejected.Add(n)
			m.rejectedCounter(seatOther, resp.Rejection.Name, resp.Rejection.NBR).Add(n)
		} else {
			sm.other.warned.Add(n)
		}
		return
	}
	// Kept bids are counted a run of one seat at a time (usually all of
	// them): one atomic add on the shared counter, not one a bid.
	var run *seatMeters
	passed, warned := 0, 0
	for i := range out.Bids {
		v := &out.Bids[i]
		s := sm.seatOf(snap, ev, i)
		if s != run {
			run.add(passed, warned)
			run, passed, warned = s, 0, 0
		}
		if !v.Kept {
			// Removed by its own rejection, else with the response.
			r := &resp.Rejection
			if v.Rejected() {
				r = &v.Rejection
			}
			s.rejected.Inc()
			m.rejectedCounter(s.label, r.Name, r.NBR).Inc()
			continue
		}
		if v.Warned() || resp.Warned() {
			warned++
			continue
		}
		passed++
	}
	run.add(passed, warned)
}

// add counts passed and warned bids of the seat (nil: none to count).
func (s *seatMeters) add(passed, warned int) {
	if passed > 0 {
		s.passed.Add(passed)
	}
	if warned > 0 {
		s.warned.Add(warned)
	}
}

// Metrics returns the set the admin listener serves on /metrics. The caller
// may register its own counters and gauges in it (serve's config reload
// counters) and describe their families with Describe: they are written
// beside the bid path's and live as long as the Server.
func (s *Server) Metrics() *metrics.Set { return s.meters.set }
