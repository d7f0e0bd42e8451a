package quarantine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind is what happened to a seat.
type EventKind uint8

// Event kinds.
const (
	// Quarantined: the detector or quarantine.seats quarantined the seat.
	Quarantined EventKind = iota + 1
	// Released: its hold and calm passed, an operator released it, it left
	// quarantine.seats, quarantine.enabled turned false, or the safety
	// valve undid a quarantine taken at the start of a shift.
	Released
	// Refused: the safety valve held back a quarantine (maxShare).
	Refused
)

var eventNames = [...]string{"", "quarantined", "released", "refused"}

func (k EventKind) String() string { return eventNames[k] }

// Event is one change of a seat's quarantine state, handed to
// Options.OnEvent.
type Event struct {
	Kind EventKind
	// Seat is the seat key: seatbid.seat, or "<upstream>/<seat>".
	Seat string
	// Signal is what the seat is (or was, or would have been) quarantined for.
	Signal Signal
	// Reason says why, in one line: "<value> over threshold <t> for
	// <dwell>" (for a price drop "<value> under threshold <priceDrop> for
	// <dwell>"; a flapping seat's adds "; held <hold>: quarantined again
	// <d> after its release"), "listed in quarantine.seats", "released by
	// an operator", "every signal under its threshold for <calm> after ttl
	// <ttl>" (or "after a hold of <hold> ..."), "removed from
	// quarantine.seats", "quarantine.enabled: false", or the safety valve's
	// "safety valve: <n> of <m> active seats ..." (on a Released event
	// ending "; quarantined <d> ago, part of the shift").
	Reason string
	At     time.Time
	// Version is the config version in force.
	Version string
}

// Options configure a Detector beyond its Settings.
type Options struct {
	// Now is the clock (nil: time.Now). Tests inject one and call Tick.
	Now func() time.Time
	// Logger receives transitions and the safety valve's refusals
	// (rate-limited); nil: slog.Default().
	Logger *slog.Logger
	// OnEvent, when set, is called with every event, in order, on the
	// goroutine that caused it (Tick, Update or Release), never with the
	// detector's lock held and never on the bid path.
	OnEvent func(Event)
}

// Detector is the anomaly detector and quarantine state machine of
// docs/design.md, "Anomaly detection and quarantine". The bid path calls
// Seat and Seat.Observe, and the quarantine gate Any and Quarantined:
// lock-free and allocation-free for known seats. Tick (called by Run every
// tick, or by a test) measures the signals and moves seats in and out of
// quarantine; Update, Release and Status take the same lock as Tick. A new
// Detector knows nothing: a restart starts clean.
type Detector struct {
	now     func() time.Time
	log     *slog.Logger
	onEvent func(Event)
	seed    maphash.Seed

	cfg atomic.Pointer[compiled] // what the bid path reads of the settings
	gen atomic.Uint32            // the cur sketch the bid path adds to
	any atomic.Int32             // quarantined seats, operator seats included
	tab table

	mu                        sync.Mutex // guards everything below and the seats' detector-owned fields
	set                       Settings
	updated                   bool    // Update has run
	epoch                     int64   // current sub-bucket epoch (time / (window / ringSize)); 0 before the first tick
	winEpoch                  int64   // current window epoch (time / window): the novelty sketches rotate when it changes
	seats                     []*Seat // every tracked seat, sorted by key
	ops                       map[string]bool
	lastValveLog, lastFullLog time.Time
	shift                     bool // the safety valve is holding: quarantines are refused until the shift ends
}

// compiled is the part of Settings the bid path reads, swapped atomically.
type compiled struct {
	enabled   bool
	qualified map[uint64]bool // hashes of "<upstream>/<seat>" keys of seat policies
	operator  map[uint64]bool // hashes of quarantine.seats entries
	pairs     bool            // some key is qualified: hash "<upstream>/<seat>" too
}

// Errors of Release.
var (
	ErrNotQuarantined = errors.New("seat is not quarantined")
	ErrOperatorSeat   = errors.New("seat is listed in quarantine.seats: remove it there to release it")
)

// New returns a detector that is off until Update gives it settings.
func New(opt Options) *Detector {
	d := &Detector{now: opt.Now, log: opt.Logger, onEvent: opt.OnEvent, seed: maphash.MakeSeed(), ops: map[string]bool{}}
	if d.now == nil {
		d.now = time.Now
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.tab.init(DefaultMaxSeats)
	d.cfg.Store(&compiled{})
	return d
}

// keyHash is the hash of a seat key as a string.
func (d *Detector) keyHash(key string) uint64 { return maphash.String(d.seed, key) }

// pairHash is keyHash(upstream + "/" + seat) without building the string.
func (d *Detector) pairHash(upstream, seat string) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteString(upstream)
	h.WriteByte('/')
	h.WriteString(seat)
	return h.Sum64()
}

// Enabled reports whether the detector observes bids (quarantine.enabled).
func (d *Detector) Enabled() bool { return d.cfg.Load().enabled }

// Count is the number of quarantined seats, operator seats included
// (bidguard_quarantined_seats).
func (d *Detector) Count() int { return int(d.any.Load()) }

// Any reports whether any seat is quarantined (engine.SeatStates).
func (d *Detector) Any() bool { return d.any.Load() > 0 }

// Quarantined returns the signal the bids of seat from upstream are
// quarantined for, or "" (engine.SeatStates): "operator" for a
// quarantine.seats entry (bare, or "<upstream>/<seat>"), else the
// detector's verdict on the seat's key. Lock-free; allocates nothing.
func (d *Detector) Quarantined(upstream, seat string) string {
	if d.any.Load() == 0 {
		return ""
	}
	c := d.cfg.Load()
	h := d.keyHash(seat)
	var hq uint64
	pair := upstream != "" && c.pairs
	if pair {
		hq = d.pairHash(upstream, seat)
	}
	if len(c.operator) > 0 && (c.operator[h] || (pair && c.operator[hq])) {
		return signalNames[Operator]
	}
	if pair && c.qualified[hq] {
		h = hq
	}
	if s := d.tab.lookup(h); s != nil {
		return signalNames[s.state.Load()]
	}
	return ""
}

// Seat returns the tracker of a seat's bids from upstream (the key is
// "<upstream>/<seat>" when a seat policy has that key, else seatbid.seat),
// creating it on its first bid. It returns nil when the detector is off or
// the seat table is full. Lock-free and allocation-free for a known seat;
// the first bid of a new seat allocates its state (about 600 bytes, see
// the package doc) under a shard lock. seat is not retained (a new seat's
// key is a copy).
func (d *Detector) Seat(upstream, seat string) *Seat {
	c := d.cfg.Load()
	if !c.enabled {
		return nil
	}
	h, qualified := d.keyHash(seat), false
	if upstream != "" && len(c.qualified) > 0 {
		if hq := d.pairHash(upstream, seat); c.qualified[hq] {
			h, qualified = hq, true
		}
	}
	if s := d.tab.lookup(h); s != nil {
		return s
	}
	return d.tab.create(h, func() *Seat {
		key := strings.Clone(seat)
		if qualified {
			key = upstream + "/" + seat
		}
		return &Seat{d: d, key: key}
	})
}

// Update applies new settings (at startup and at every config reload).
// Operator seats added to or removed from quarantine.seats are quarantined
// or released at once; quarantine.enabled false releases every seat the
// detector quarantined and forgets every seat; a new window length empties
// the windows (baselines stay). The first Update logs that the detector
// starts clean.
func (d *Detector) Update(set Settings) error {
	if errs := set.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	set = set.withDefaults()
	c := &compiled{enabled: set.Enabled, qualified: map[uint64]bool{}, operator: map[uint64]bool{}}
	for _, k := range set.Qualified {
		c.qualified[d.keyHash(k)] = true
	}
	for _, k := range set.Operator {
		c.operator[d.keyHash(k)] = true
		c.pairs = c.pairs || strings.Contains(k, "/")
	}
	c.pairs = c.pairs || len(c.qualified) > 0

	d.mu.Lock()
	now := d.now()
	var ev []Event
	add := func(kind EventKind, seat string, sig Signal, reason string) {
		ev = append(ev, Event{Kind: kind, Seat: seat, Signal: sig, Reason: reason, At: now, Version: set.Version})
	}
	ops := map[string]bool{}
	for _, k := range set.Operator {
		ops[k] = true
	}
	for _, k := range sortedKeys(d.ops) {
		if !ops[k] {
			add(Released, k, Operator, "removed from quarantine.seats")
		}
	}
	for _, k := range sortedKeys(ops) {
		if !d.ops[k] {
			add(Quarantined, k, Operator, "listed in quarantine.seats")
		}
	}
	d.ops = ops
	first := !d.updated
	switch {
	case d.set.Enabled && !set.Enabled:
		for _, s := range d.seats {
			if s.signal != None {
				add(Released, s.key, s.signal, "quarantine.enabled: false")
			}
		}
		d.cfg.Store(c) // the bid path stops creating seats before they are dropped
		d.seats = d.tab.rebuild(nil, d.seats)
		drop := map[*Seat]bool{}
		for _, s := range d.seats {
			s.state.Store(uint32(None))
			drop[s] = true
		}
		d.seats = d.tab.rebuild(drop, d.seats)
		d.shift = false
	case d.updated && set.Window != d.set.Window:
		for _, s := range d.seats {
			s.resetWindow()
		}
		d.epoch = 0 // the next tick starts the new sub-bucket epochs
	}
	if set.Enabled && !d.set.Enabled && d.updated {
		d.log.Info("quarantine detector enabled: seats are learned from now on")
	}
	d.set, d.updated = set, true
	d.tab.max.Store(int64(set.MaxSeats)) // a smaller table is evicted down at the next tick
	d.cfg.Store(c)
	d.recount()
	d.mu.Unlock()

	if first {
		if set.Enabled {
			d.log.Info("quarantine detector starting clean: no seat state survives a restart; each seat's baseline is learned again from its first bid",
				"window", set.Window, "baselineWindow", set.BaselineWindow, "operatorSeats", len(ops))
		} else {
			d.log.Info("quarantine detector off (quarantine.enabled: false); quarantine.seats still apply", "operatorSeats", len(ops))
		}
	}
	d.emit(ev)
	return nil
}

// recount publishes the number of quarantined seats: the operator seats,
// and the seats the detector quarantined that are not among them.
func (d *Detector) recount() {
	n := len(d.ops)
	for _, s := range d.seats {
		if s.signal != None && !d.ops[s.key] {
			n++
		}
	}
	d.any.Store(int32(n))
}

// Release lifts the quarantine of a seat by its key, as an operator: the
// seat's baseline is forgotten, so what it sends from now on is its new
// normal (price, novelty and velocity are judged again once the baseline is
// warm; the rejection rate at once). ErrOperatorSeat for a quarantine.seats
// entry, ErrNotQuarantined when the detector holds no quarantine of it.
func (d *Detector) Release(key string) error {
	d.mu.Lock()
	if d.ops[key] {
		d.mu.Unlock()
		return ErrOperatorSeat
	}
	s := d.tab.lookup(d.keyHash(key))
	if s == nil || s.signal == None || s.key != key {
		d.mu.Unlock()
		return ErrNotQuarantined
	}
	now := d.now()
	ev := Event{Kind: Released, Seat: s.key, Signal: s.signal, Reason: "released by an operator", At: now, Version: d.set.Version}
	d.release(s, now)
	s.forget()
	d.recount()
	d.mu.Unlock()
	d.emit([]Event{ev})
	return nil
}

// release lifts the detector's quarantine of s at now; the hold and
// strikes stay for the next quarantine's backoff.
func (d *Detector) release(s *Seat, now time.Time) {
	s.signal, s.since, s.calmSince, s.released = None, time.Time{}, time.Time{}, now
	s.state.Store(uint32(None))
}

// emit logs events and hands them to OnEvent.
func (d *Detector) emit(ev []Event) {
	for _, e := range ev {
		switch e.Kind {
		case Quarantined:
			d.log.Warn("seat quarantined", "seat", e.Seat, "signal", e.Signal.String(), "reason", e.Reason)
		case Released:
			d.log.Info("seat released", "seat", e.Seat, "signal", e.Signal.String(), "reason", e.Reason)
		}
		if d.onEvent != nil {
			d.onEvent(e)
		}
	}
}

// TickEvery is how often Run ticks: a sub-bucket (window/6), at most a
// second and at least 10 ms.
func (d *Detector) TickEvery() time.Duration {
	d.mu.Lock()
	t := d.set.sub()
	d.mu.Unlock()
	switch {
	case t > time.Second:
		t = time.Second
	case t < 10*time.Millisecond:
		t = 10 * time.Millisecond
	}
	return t
}

// Run ticks every TickEvery until ctx is done.
func (d *Detector) Run(ctx context.Context) {
	t := time.NewTimer(d.TickEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.Tick()
			t.Reset(d.TickEvery())
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// formatFloat writes a signal value or threshold in reasons: at most 3
// significant decimals.
func formatFloat(v float64) string { return fmt.Sprintf("%.3g", v) }
