package rtb

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// breakerState is a circuit breaker's state, also the value of
// bidguard_upstream_breaker_state.
type breakerState int32

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerHalfOpen
)

var breakerStateNames = [...]string{"closed", "open", "half-open"}

// verdict is what a bidder call tells the breaker.
type verdict uint8

const (
	callOK      verdict = iota // the bidder answered (any status under 500)
	callFailed                 // connect, tls, timeout or a 5xx answer
	callNeutral                // neither (a reset connection, say): the count stays
)

// verdictOf classifies a call's outcome: kind when err is not nil, else
// the answer's status.
func verdictOf(kind errKind, err error, status int) verdict {
	if err == nil {
		if status >= 500 {
			return callFailed
		}
		return callOK
	}
	switch kind {
	case kindConnect, kindTLS, kindTimeout:
		return callFailed
	}
	return callNeutral
}

// breaker is one upstream's circuit breaker (config.Breaker). Closed, it
// counts consecutive failures and opens at the threshold; open, it refuses
// every call until openFor has passed; half-open, it lets one call at a
// time through (a trial), closes after the required successes in a row and
// opens again on a failure. Every transition is logged at WARN with the
// last error and set on the gauge.
//
// Its methods are safe for concurrent use. In the closed state allow and a
// successful report are an atomic load each and allocate nothing.
type breaker struct {
	state     atomic.Int32 // breakerState
	failures  atomic.Int32 // consecutive failures while closed
	threshold atomic.Int32 // failures that open it; 0: never opens
	openFor   atomic.Int64 // time.Duration
	successes atomic.Int32 // successes in a row that close it
	openedAt  atomic.Int64 // time.Duration: when it last opened

	now   func() time.Duration // monotonic clock (tests inject one)
	log   *slog.Logger
	name  string
	gauge *metrics.Gauge

	mu      sync.Mutex
	trial   bool // a half-open call is in flight
	okInRow int
	lastErr string
}

func newBreaker(name string, log *slog.Logger, gauge *metrics.Gauge) *breaker {
	b := &breaker{now: monotonic, log: log, name: name, gauge: gauge}
	b.gauge.Set(0)
	return b
}

// configure sets the thresholds (a reload may change them; the state is kept).
func (b *breaker) configure(failures int, openFor time.Duration, successes int) {
	b.threshold.Store(int32(min(failures, math.MaxInt32)))
	b.openFor.Store(int64(openFor))
	b.successes.Store(int32(min(successes, math.MaxInt32)))
}

// refuses reports, without taking a trial, whether a call now would be
// refused: open and not yet due for a trial. The bid path asks it before
// decoding a request, so an open breaker answers at once; it takes no
// lock.
func (b *breaker) refuses() bool {
	return breakerState(b.state.Load()) == breakerOpen && b.openNow()
}

// openNow reports whether openFor has not passed since it opened.
func (b *breaker) openNow() bool {
	return b.now()-time.Duration(b.openedAt.Load()) < time.Duration(b.openFor.Load())
}

// allow reports whether a call may go to the bidder now; trial is true
// for the half-open call whose report decides the state. A caller that
// is allowed must report once.
func (b *breaker) allow() (ok, trial bool) {
	switch breakerState(b.state.Load()) {
	case breakerClosed:
		return true, false
	case breakerOpen:
		if b.openNow() {
			return false, false
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch breakerState(b.state.Load()) {
	case breakerClosed:
		return true, false
	case breakerOpen:
		if b.openNow() {
			return false, false
		}
		b.setLocked(breakerHalfOpen, 0)
		b.okInRow = 0
	}
	if b.trial {
		return false, false
	}
	b.trial = true
	return true, true
}

// report records an allowed call's verdict; err (or the status, for a
// 5xx) is kept as the last error for the transition log.
func (b *breaker) report(trial bool, v verdict, err error, status int) {
	if !trial {
		switch {
		case v == callOK:
			if b.failures.Load() != 0 {
				b.failures.Store(0)
			}
			return
		case v == callNeutral || breakerState(b.state.Load()) != breakerClosed:
			return // late reports of calls let through before it opened
		}
		n := b.failures.Add(1)
		if t := b.threshold.Load(); t == 0 || n < t {
			return
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v == callFailed {
		b.lastErr = describeFailure(err, status)
	}
	switch {
	case !trial:
		if breakerState(b.state.Load()) == breakerClosed {
			b.openLocked(int(b.failures.Load()))
		}
	case v == callFailed:
		b.trial = false
		b.openLocked(1)
	default:
		b.trial = false
		if v == callOK {
			b.okInRow++
		}
		if b.okInRow >= int(b.successes.Load()) {
			b.failures.Store(0)
			b.setLocked(breakerClosed, b.okInRow)
		}
	}
}

func (b *breaker) openLocked(failures int) {
	b.openedAt.Store(int64(b.now()))
	b.setLocked(breakerOpen, failures)
}

// setLocked moves to s and logs the transition; n is the failures that
// opened it or the successes that closed it.
func (b *breaker) setLocked(s breakerState, n int) {
	from := breakerState(b.state.Load())
	b.state.Store(int32(s))
	b.gauge.Set(float64(s))
	args := []any{"upstream", b.name, "from", breakerStateNames[from], "to", breakerStateNames[s]}
	switch s {
	case breakerOpen:
		args = append(args, "failures", n, "open_ms", time.Duration(b.openFor.Load()).Milliseconds(), "last_error", b.lastErr)
	case breakerClosed:
		args = append(args, "successes", n)
	default:
		args = append(args, "last_error", b.lastErr)
	}
	b.log.Warn("upstream circuit breaker "+breakerStateNames[s], args...)
}

// current returns the state.
func (b *breaker) current() breakerState { return breakerState(b.state.Load()) }

// describeFailure is the text of a failure for logs: the error's cause in
// a few words, or the status.
func describeFailure(err error, status int) string {
	if err == nil {
		return fmt.Sprintf("status %d", status)
	}
	for _, c := range []struct {
		errno syscall.Errno
		text  string
	}{
		{syscall.ECONNREFUSED, "connect refused"},
		{syscall.ECONNRESET, "connection reset"},
		{syscall.EHOSTUNREACH, "host unreachable"},
		{syscall.ENETUNREACH, "network unreachable"},
		{syscall.ETIMEDOUT, "connect timed out"},
	} {
		if errors.Is(err, c.errno) {
			return c.text
		}
	}
	if isTimeout(err) {
		return "no answer by the deadline"
	}
	return err.Error()
}

// failureWindow is the least time between two log lines of one upstream
// and failure kind.
const failureWindow = 10 * time.Second

// failureLog logs an upstream's failures, at most one line per kind per
// failureWindow; the line counts the failures since the previous one
// ("bidder unreachable: connect refused, 37 in the last 10 s"). Counting
// a failure allocates nothing; a line is built only when written.
type failureLog struct {
	log   *slog.Logger
	name  string
	now   func() time.Duration
	kinds [numKinds]struct {
		n    atomic.Int64
		last atomic.Int64 // time.Duration of the last line; 0: none yet
	}
}

// failureWhat is the start of a failure line, by kind.
var failureWhat = [numKinds]string{
	kindTimeout:     "bidder timed out",
	kindConnect:     "bidder unreachable",
	kindReset:       "bidder closed the connection",
	kindHTTPStatus:  "bidder answered an error status",
	kindBadJSON:     "bidder answered malformed JSON",
	kindTooLarge:    "bidder answer too large",
	kindDecompress:  "bidder answer failed to decompress",
	kindRedirect:    "bidder answered a redirect",
	kindBadEncoding: "bidder answer has an unsupported Content-Encoding",
	kindTLS:         "bidder TLS handshake failed",
}

// record counts one failure of kind k and writes a line when the window
// since the last one has passed (the first failure is written at once).
func (f *failureLog) record(k errKind, err error, status int) {
	c := &f.kinds[k]
	n := c.n.Add(1)
	now := f.now() + 1 // never 0, which means "no line yet"
	last := c.last.Load()
	if last != 0 && now-time.Duration(last) < failureWindow || !c.last.CompareAndSwap(last, int64(now)) {
		return
	}
	n = c.n.Swap(0)
	msg := failureWhat[k] + ": " + describeFailure(err, status)
	if last != 0 {
		msg = fmt.Sprintf("%s, %d in the last %d s", msg, n, (now-time.Duration(last)+time.Second/2)/time.Second)
	}
	f.log.Warn(msg, "upstream", f.name, "kind", kindNames[k], "count", n)
}
