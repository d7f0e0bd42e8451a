package rtb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"github.com/valyala/fasthttp/pprofhandler"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/pool"
)

// Options configure a Server beyond what its snapshots say.
type Options struct {
	// Version is the binary's version: the bidder sees User-Agent: bidguard/<Version>.
	Version string
	// Revision is the VCS revision the binary was built from. Both are
	// labels of bidguard_build_info ("unknown" when empty).
	Revision string
	// Logger receives startup, shutdown and rate-limited panic reports,
	// never a line per request or per bid. Nil means slog.Default().
	Logger *slog.Logger
	// Dial, when set, replaces TCP dialing to the upstreams (in-memory
	// listeners in benchmarks).
	Dial func(addr string) (net.Conn, error)
	// Drain is how long Shutdown keeps idle exchange connections open so
	// that a request arriving on one is answered 204 rather than refused
	// (0: DefaultDrain).
	Drain time.Duration
	// Audit, when set, is called with every judged response whose outcome
	// lists a hit (Outcome.NumHits > 0: a rejection, a would-be rejection
	// or a warning), on the request goroutine, before the answer is sent. It must
	// not block and must not retain ev, out or anything they reference. A
	// panic in it is answered 204 and counted as panics_total{where="audit"}.
	Audit func(snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome)
	// Judged, when set, is called with every judged response and the name
	// of the upstream that answered, after Audit, under the same contract
	// (serve feeds the anomaly detector).
	Judged func(upstream string, snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome)
	// Capture, when set, is called with every judged response after
	// Judged, under the same contract (serve samples auctions for replay:
	// ev.In holds the documents as received, the arrival and the latency).
	Capture func(upstream string, snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome)
	// Quarantine, when set, answers the admin listener's /quarantine and
	// /quarantine/... paths (a net/http handler, adapted; admin traffic only).
	Quarantine http.Handler
	// Pprof serves Go's profiles under /debug/pprof/ on the admin listener
	// (serve --pprof): for measuring the bid path under load. Off by
	// default; the admin listener must not be reachable from untrusted
	// networks when it is on.
	Pprof bool
}

// DefaultDrain is Options.Drain when unset.
const DefaultDrain = time.Second

// Exchange listener timeouts: a request must be read, and an answer
// written, within these (a slow client gets 408, a slow reader is cut).
const (
	exchangeReadTimeout  = 10 * time.Second
	exchangeWriteTimeout = 10 * time.Second
)

// Server is the sidecar: the exchange-facing fasthttp server, one pooled
// client per upstream, and the admin listener. It reads the current
// snapshot from its Holder; every request loads it once on arrival and keeps
// it to the end. A Server is safe for concurrent use.
type Server struct {
	holder *engine.Holder
	log    *slog.Logger
	ua     []byte
	audit  func(*engine.Snapshot, *engine.Eval, *engine.Outcome)
	judged func(string, *engine.Snapshot, *engine.Eval, *engine.Outcome)
	capt   func(string, *engine.Snapshot, *engine.Eval, *engine.Outcome)
	quar   fasthttp.RequestHandler // Options.Quarantine, adapted
	pprof  bool                    // Options.Pprof
	meters *meters

	limiter  pool.Limiter
	cost     judgeCost
	rejects  rejectLog
	draining atomic.Bool
	leaving  atomic.Bool // Drain was called: not ready, answers close their connection
	cur      atomic.Pointer[state]
	lastLog  atomic.Int64 // unix nanos of the last panic report

	open         atomic.Int64 // open exchange connections
	defaultConns int          // limits.maxConns when the config leaves it 0
	drain        time.Duration
	// deadlineSlack is how much earlier than asked an exchange
	// connection's read or write deadline may expire (exchangeConn): 1/64
	// of the shortest of its timeouts.
	deadlineSlack time.Duration

	gov      *governor
	govOnce  sync.Once
	govStop  chan struct{}
	stopOnce sync.Once

	mu        sync.Mutex // guards install, clients, listeners
	clients   pools
	listeners []net.Listener

	srv, admin *fasthttp.Server
}

// state is what the bid path derives from one snapshot: routes and the
// metric series of its label values. Built once per snapshot.
type state struct {
	snap    *engine.Snapshot
	version []byte
	routes  map[string]*upstream
	limits  config.Limits
	m       *snapMeters
	// few holds the routes when there are at most maxScanRoutes, for
	// route's comparisons (cheaper than hashing the path); catchAll is
	// the route of "/". Both are set by index.
	few      []*upstream
	catchAll *upstream
}

// maxScanRoutes is the most routes route compares one by one.
const maxScanRoutes = 8

// New builds a Server over h. When h already holds a snapshot it is
// installed at once and its errors (a bad upstream URL) are returned, so a
// bad config stops startup before anything listens. The exchange listener's
// wire cap on request bodies is the limits.maxRequestBytes of that snapshot
// (256 KiB without one); a reloaded lower limit is enforced per request, a
// higher one from the next start.
func New(h *engine.Holder, opt Options) (*Server, error) {
	s := &Server{
		holder:  h,
		log:     opt.Logger,
		ua:      []byte("bidguard/" + opt.Version),
		audit:   opt.Audit,
		judged:  opt.Judged,
		capt:    opt.Capture,
		meters:  newMeters(),
		clients: pools{dial: opt.Dial, byKey: map[clientKey]*hostPool{}},
	}
	s.clients.m = &s.meters.client
	s.meters.buildInfo(opt.Version, opt.Revision)
	if s.log == nil {
		s.log = slog.Default()
	}
	s.clients.log = s.log
	if opt.Version == "" {
		s.ua = []byte("bidguard")
	}
	if opt.Quarantine != nil {
		s.quar = fasthttpadaptor.NewFastHTTPHandler(opt.Quarantine)
	}
	s.pprof = opt.Pprof
	s.drain = opt.Drain
	if s.drain <= 0 {
		s.drain = DefaultDrain
	}
	s.defaultConns = DefaultMaxConns(nofileLimit())
	s.meters.connections(func() float64 { return float64(s.open.Load()) })
	s.gov, s.govStop = newGovernor(), make(chan struct{})
	s.meters.inflightLimit(func() float64 { return float64(s.gov.effective(s.maxInFlight())) })
	s.rejects = rejectLog{log: s.log, suppressed: s.meters.logSuppressed}
	maxBody := 256 << 10
	idle := 10 * time.Second
	if snap := h.Load(); snap != nil {
		if err := s.Install(snap); err != nil {
			return nil, err
		}
		maxBody = snap.Config.Limits.MaxRequestBytes
		if ms := snap.Config.Limits.IdleTimeoutMs; ms > 0 {
			idle = time.Duration(ms) * time.Millisecond
		}
	}
	s.deadlineSlack = min(idle, exchangeReadTimeout, exchangeWriteTimeout) / 64
	s.srv = &fasthttp.Server{
		Handler:                      s.handle,
		ErrorHandler:                 s.handleError,
		MaxRequestBodySize:           maxBody,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		ReadTimeout:                  exchangeReadTimeout,
		WriteTimeout:                 exchangeWriteTimeout,
		IdleTimeout:                  idle,
		// Idle worker goroutines (one per connection served) end after a
		// second instead of fasthttp's 10 s. ReduceMemoryUsage stays off: it
		// releases and re-acquires the connection's buffers around every
		// request (an allocation and two pool round trips each); idle
		// connections are bounded instead by limits.idleTimeoutMs and
		// limits.maxConns.
		MaxIdleWorkerDuration: time.Second,
		// The connection cap is the listener's (limits.maxConns); fasthttp's
		// own would answer 503 and is kept out of the way.
		Concurrency: 1 << 22,
		Logger:      fasthttpLogger{s.log},
	}
	s.admin = &fasthttp.Server{
		Handler:               s.handleAdmin,
		NoDefaultServerHeader: true,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
		IdleTimeout:           30 * time.Second,
		CloseOnShutdown:       true,
		Logger:                fasthttpLogger{s.log},
	}
	return s, nil
}

// Install builds the bid path's state for snap (routes, upstream clients,
// metric series) and makes it current for requests that load snap. It is
// called by New and, lazily, by the first request that sees a new snapshot;
// a reload loop may call it before swapping the Holder to learn about errors
// first. Installing the same snapshot twice is cheap.
func (s *Server) Install(snap *engine.Snapshot) error {
	_, err := s.install(snap)
	return err
}

func (s *Server) install(snap *engine.Snapshot) (*state, error) {
	if st := s.cur.Load(); st != nil && st.snap == snap {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.cur.Load(); st != nil && st.snap == snap {
		return st, nil
	}
	cfg := snap.Config
	st := &state{
		snap:    snap,
		version: []byte(snap.Version),
		routes:  make(map[string]*upstream, len(cfg.Upstreams)),
		limits:  cfg.Limits,
		m:       s.meters.forSnapshot(snap),
	}
	var errs []error
	keep := map[*hostPool]bool{}
	for _, u := range cfg.Upstreams {
		up, err := newUpstream(u, cfg, s.ua, &s.clients, s.meters.upstream(u.Name), s.meters.forward(u.Name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keep[up.pool] = true
		st.routes[up.path] = up
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	st.index()
	s.clients.retain(keep)
	s.cur.Store(st)
	return st, nil
}

// stateFor returns the installed state of snap, installing it on first use.
func (s *Server) stateFor(snap *engine.Snapshot) *state {
	if st := s.cur.Load(); st != nil && st.snap == snap {
		return st
	}
	st, err := s.install(snap)
	if err != nil {
		// The snapshot's upstreams cannot be used: route nothing, so every
		// request is answered 404 until a good config is loaded.
		s.logLimited("config has unusable upstreams", "error", err)
		st = &state{snap: snap, version: []byte(snap.Version), routes: map[string]*upstream{}, limits: snap.Config.Limits, m: s.meters.forSnapshot(snap)}
		st.index()
		s.cur.Store(st)
	}
	return st
}

// index sets few and catchAll from routes.
func (st *state) index() {
	st.catchAll = st.routes["/"]
	st.few = nil
	if len(st.routes) <= maxScanRoutes {
		st.few = make([]*upstream, 0, len(st.routes))
		for _, up := range st.routes {
			st.few = append(st.few, up)
		}
	}
}

// route returns the upstream for an exact path: the path itself, else the
// catch-all "/".
func (st *state) route(path []byte) *upstream {
	if st.few != nil {
		for _, up := range st.few {
			if up.path == string(path) {
				return up
			}
		}
		return st.catchAll
	}
	if up := st.routes[string(path)]; up != nil {
		return up
	}
	return st.catchAll
}

// Handler returns the exchange-facing request handler (for in-memory
// listeners).
func (s *Server) Handler() fasthttp.RequestHandler { return s.handle }

// Serve answers the exchange on ln until Shutdown. ln is wrapped: accept
// errors such as EMFILE are retried with back-off, connections over
// limits.maxConns are closed at once, and every request's framing is checked
// before fasthttp reads it.
func (s *Server) Serve(ln net.Listener) error {
	s.govOnce.Do(func() {
		go s.gov.run(s.govStop, s.limiter.InFlight, s.maxInFlight)
	})
	return s.serve(s.srv, s.newListener(ln, true))
}

// maxInFlight is the current limits.maxInFlight.
func (s *Server) maxInFlight() int {
	if st := s.cur.Load(); st != nil {
		return st.limits.MaxInFlight
	}
	return 0
}

// maxConns is the current limits.maxConns, derived when the config says 0.
func (s *Server) maxConns() int {
	if st := s.cur.Load(); st != nil && st.limits.MaxConns > 0 {
		return st.limits.MaxConns
	}
	return s.defaultConns
}

// OpenConns returns the number of open exchange connections.
func (s *Server) OpenConns() int64 { return s.open.Load() }

// ServeAdmin answers /metrics, /healthz, /readyz and, with
// Options.Quarantine, /quarantine... on ln until Shutdown; like Serve, it
// retries temporary accept errors.
func (s *Server) ServeAdmin(ln net.Listener) error { return s.serve(s.admin, s.newListener(ln, false)) }

func (s *Server) serve(srv *fasthttp.Server, ln net.Listener) error {
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		return ln.Close()
	}
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	err := srv.Serve(ln)
	if s.draining.Load() {
		return nil
	}
	return err
}

// Drain starts a graceful shutdown's first phase: /readyz answers 503 from
// now on, so the balancer takes the sidecar out of rotation, while both
// listeners keep accepting and serving as before; every exchange answer
// carries Connection: close, so the client's next request opens a new
// connection, which the balancer sends elsewhere once it has seen the
// 503. Shutdown ends the phase.
func (s *Server) Drain() { s.leaving.Store(true) }

// Shutdown stops accepting connections, turns /readyz to 503, answers
// requests that arrive on open connections with an immediate 204
// (shed_total{reason="shutdown"}) and Connection: close, and lets requests
// in flight finish. Idle connections stay open for the drain period
// (Options.Drain) so that a request sent on one just after the signal is
// answered rather than refused; then they are closed. It returns when every
// connection is closed or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	lns := s.listeners
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.govStop) })
	for _, ln := range lns {
		if l, ok := ln.(*listener); ok {
			_ = l.Close() // stop accepting; fasthttp's Serve returns
		}
	}
	drain := time.NewTimer(s.drain)
	tick := time.NewTicker(10 * time.Millisecond)
wait:
	for s.open.Load() > 0 {
		select {
		case <-drain.C:
			break wait
		case <-ctx.Done():
			break wait
		case <-tick.C:
		}
	}
	drain.Stop()
	tick.Stop()
	err := s.srv.ShutdownWithContext(ctx)
	err2 := s.admin.ShutdownWithContext(ctx)
	for _, ln := range lns {
		_ = ln.Close() // Serve has returned or never started; the error is moot
	}
	s.mu.Lock()
	s.clients.closeAll()
	s.mu.Unlock()
	s.rejects.flush()
	return errors.Join(err, err2)
}

// Ready reports whether a config is loaded and the server is neither
// draining nor shutting down.
func (s *Server) Ready() bool {
	return s.holder.Load() != nil && !s.draining.Load() && !s.leaving.Load()
}

// upstreamsDown reports, with admin.readyRequiresUpstream, whether the
// circuit breaker of every upstream of the current config is open.
func (s *Server) upstreamsDown() bool {
	snap := s.holder.Load()
	if snap == nil || !snap.Config.Admin.ReadyRequiresUpstream {
		return false
	}
	st := s.stateFor(snap)
	if len(st.routes) == 0 {
		return false
	}
	for _, up := range st.routes {
		if up.pool.brk == nil || up.pool.brk.current() != breakerOpen {
			return false
		}
	}
	return true
}

// handleAdmin serves the admin listener.
func (s *Server) handleAdmin(ctx *fasthttp.RequestCtx) {
	if snap := s.holder.Load(); snap != nil {
		ctx.Response.Header.Set(hdrConfig, snap.Version)
	}
	switch string(ctx.Path()) {
	case "/metrics":
		ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
		s.WriteMetrics(ctx)
	case "/healthz", "/readyz":
		ctx.SetContentType("text/plain; charset=utf-8")
		if !s.Ready() {
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.SetBodyString("not ready\n")
			return
		}
		if string(ctx.Path()) == "/readyz" && s.upstreamsDown() {
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.SetBodyString("not ready: every upstream's circuit breaker is open\n")
			return
		}
		ctx.SetBodyString("ok\n")
	default:
		if s.pprof && bytes.HasPrefix(ctx.Path(), []byte("/debug/pprof/")) {
			pprofhandler.PprofHandler(ctx)
			return
		}
		if p := ctx.Path(); s.quar != nil && (string(p) == "/quarantine" || bytes.HasPrefix(p, []byte("/quarantine/"))) {
			s.quar(ctx)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	}
}

// logLimited logs at most once a second: for conditions that could repeat
// on every request.
func (s *Server) logLimited(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := s.lastLog.Load()
	if now-last < int64(time.Second) || !s.lastLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Error(msg, args...)
}

// fasthttpLogger routes fasthttp's own messages (connection-level errors)
// to slog at debug level.
type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	if f.l.Enabled(context.Background(), slog.LevelDebug) {
		f.l.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
	}
}
