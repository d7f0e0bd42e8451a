package quarantine

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The simulation: seats send bids through Seat/Observe at a rate, with
// log-normal prices around a median, from a fixed set of creatives and
// advertisers, a share of them rejected; a fake clock advances one step at
// a time and Tick runs after each step. Everything is seeded: the runs are
// deterministic.

var epoch0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// defaultSettings are the settings most scenarios were written for: the
// defaults but for a price threshold of 5 (defaults() in valve_test.go has
// them all).
func defaultSettings() Settings {
	return Settings{
		Enabled: true, Window: time.Minute, BaselineWindow: time.Hour, Dwell: 30 * time.Second, TTL: 10 * time.Minute,
		Calm: 2 * time.Minute, MinSamples: 100, MaxShare: 0.5,
		Thresholds: Thresholds{Rejections: 0.5, Price: 5, Novelty: 0.8, Velocity: 10}, Version: "v1",
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// traffic is one simulated seat. Each function of the time since the start
// may be nil (the steady default).
type traffic struct {
	upstream, seat string
	rate           func(t time.Duration) float64 // bids per second (4)
	median         func(t time.Duration) float64 // median price (1.5)
	fresh          func(t time.Duration) float64 // share of bids from never-seen advertisers (0)
	reject         float64                       // share rejected by gates (0.05)
	carry          float64
	freshN         int
}

type sim struct {
	t      *testing.T
	d      *Detector
	now    time.Time
	start  time.Time
	rng    *rand.Rand
	seats  []*traffic
	events []Event
	log    *lockedBuffer
	mu     sync.Mutex
}

func newSim(t *testing.T, set Settings, seats ...*traffic) *sim {
	return newSimMax(t, set, 0, seats...)
}

func newSimMax(t *testing.T, set Settings, maxSeats int, seats ...*traffic) *sim {
	t.Helper()
	s := &sim{t: t, now: epoch0, start: epoch0, rng: rand.New(rand.NewPCG(1, 2)), seats: seats, log: &lockedBuffer{}}
	s.d = New(Options{
		Now:     func() time.Time { return s.now },
		Logger:  slog.New(slog.NewTextHandler(s.log, nil)),
		OnEvent: func(e Event) { s.mu.Lock(); s.events = append(s.events, e); s.mu.Unlock() },
	})
	set.MaxSeats = maxSeats
	require.NoError(t, s.d.Update(set))
	return s
}

// steadySeats returns n steady seats s0..s(n-1) with medians 0.5 to ~3.
func steadySeats(n int) []*traffic {
	out := make([]*traffic, n)
	for i := range out {
		m := 0.5 + 0.4*float64(i)
		out[i] = &traffic{seat: fmt.Sprintf("s%d", i), median: func(time.Duration) float64 { return m }}
	}
	return out
}

// creatives and brands are what steady seats send.
var creatives, brands = func() (c, b []string) {
	for i := range 20 {
		c = append(c, fmt.Sprintf("cr-%d", i))
	}
	for i := range 5 {
		b = append(b, fmt.Sprintf("brand-%d.com", i))
	}
	return c, b
}()

func orDefault(f func(time.Duration) float64, t time.Duration, v float64) float64 {
	if f == nil {
		return v
	}
	return f(t)
}

// step sends every seat's bids for one step, advances the clock and ticks.
func (s *sim) step(d time.Duration) {
	el := s.now.Sub(s.start)
	for _, tr := range s.seats {
		want := orDefault(tr.rate, el, 4)*d.Seconds() + tr.carry
		n := int(want)
		tr.carry = want - float64(n)
		seat := s.d.Seat(tr.upstream, tr.seat)
		if seat == nil {
			continue
		}
		median := orDefault(tr.median, el, 1.5)
		fresh := orDefault(tr.fresh, el, 0)
		reject := tr.reject
		if reject == 0 {
			reject = 0.05
		}
		for range n {
			b := Bid{Price: median * math.Exp(0.3*s.rng.NormFloat64()), HasPrice: true, Rejected: s.rng.Float64() < reject}
			if s.rng.Float64() < fresh {
				tr.freshN++
				b.CRID = fmt.Sprintf("new-cr-%d", tr.freshN)
				b.ADomain = []string{fmt.Sprintf("new-brand-%d.com", tr.freshN)}
			} else {
				c := s.rng.IntN(len(creatives))
				b.CRID, b.ADomain = creatives[c], brands[c%len(brands):][:1]
			}
			seat.Observe(&b)
		}
	}
	s.now = s.now.Add(d)
	s.d.Tick()
}

// run steps for a duration, calling check (when set) after every step.
func (s *sim) run(dur, step time.Duration, check func()) {
	for end := s.now.Add(dur); s.now.Before(end); {
		s.step(step)
		if check != nil {
			check()
		}
	}
}

func (s *sim) elapsed() time.Duration { return s.now.Sub(s.start) }

func (s *sim) state(seat string) string { return s.d.Quarantined("", seat) }

// kinds lists the events as "kind seat signal".
func (s *sim) kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, fmt.Sprintf("%s %s %s", e.Kind, e.Seat, e.Signal))
	}
	return out
}

func (s *sim) eventsOf(kind EventKind) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, e := range s.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// untilQuarantined steps until seat is quarantined and returns when, or
// fails after limit.
func (s *sim) untilQuarantined(seat string, limit, step time.Duration) time.Duration {
	s.t.Helper()
	for end := s.now.Add(limit); s.now.Before(end); {
		s.step(step)
		if s.state(seat) != "" {
			return s.elapsed()
		}
	}
	s.t.Fatalf("%s not quarantined within %v; events %v\nlog:\n%s", seat, limit, s.kinds(), s.log.String())
	return 0
}

func lines(log, substr string) int { return strings.Count(log, substr) }
