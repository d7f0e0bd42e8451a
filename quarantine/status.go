package quarantine

import (
	"math"
	"sort"
	"time"
)

// Status is what GET /quarantine answers.
type Status struct {
	Enabled bool      `json:"enabled"`
	Now     time.Time `json:"now"`
	// Settings in force.
	Window         string  `json:"window"`
	BaselineWindow string  `json:"baseline_window"`
	Dwell          string  `json:"dwell"`
	TTL            string  `json:"ttl"`
	Calm           string  `json:"calm"`
	MinSamples     int     `json:"min_samples"`
	MaxShare       float64 `json:"max_share"`
	// ActiveSeats have at least minSamples bids in their window: the safety
	// valve's denominator.
	ActiveSeats      int `json:"active_seats"`
	TrackedSeats     int `json:"tracked_seats"`
	MaxSeats         int `json:"max_seats"`
	QuarantinedSeats int `json:"quarantined_seats"`
	// Seats: quarantined seats first, then by key.
	Seats []SeatStatus `json:"seats"`
}

// SeatStatus is one seat of Status.
type SeatStatus struct {
	Seat string `json:"seat"`
	// State is learning (the baseline is not warm yet: only the rejection
	// rate is judged), normal, over (a signal is over its threshold, dwell
	// pending), refused (held back by the safety valve) or quarantined.
	State  string `json:"state"`
	Signal string `json:"signal,omitempty"`
	// Since is when the quarantine began; Until the earliest release if
	// every signal stays under its threshold (none for operator seats).
	Since    *time.Time `json:"since,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
	// Bids in the window.
	Bids    uint32         `json:"bids"`
	Signals []SignalStatus `json:"signals,omitempty"`
}

// SignalStatus is one signal of a seat, as of the last tick.
type SignalStatus struct {
	Signal    string     `json:"signal"`
	Value     float64    `json:"value"`
	Threshold float64    `json:"threshold"`
	Judged    bool       `json:"judged"`
	Over      bool       `json:"over"`
	OverSince *time.Time `json:"over_since,omitempty"`
}

// Status reports every tracked seat and every operator seat.
func (d *Detector) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	set := &d.set
	st := Status{
		Enabled: set.Enabled, Now: d.now(), Window: set.Window.String(), BaselineWindow: set.BaselineWindow.String(),
		Dwell: set.Dwell.String(), TTL: set.TTL.String(), Calm: set.Calm.String(), MinSamples: set.MinSamples,
		MaxShare: set.MaxShare, TrackedSeats: len(d.seats), MaxSeats: int(d.tab.max), QuarantinedSeats: int(d.any.Load()),
		Seats: []SeatStatus{},
	}
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	tracked := map[string]bool{}
	for _, s := range d.seats {
		tracked[s.key] = true
		if s.win.bids >= uint32(set.MinSamples) {
			st.ActiveSeats++
		}
		ss := SeatStatus{Seat: s.key, State: "normal", LastSeen: at(s.lastSeen), Bids: s.win.bids}
		th := d.thresholds(s.key)
		over := false
		for i, sig := range Measured() {
			o := s.over(i, &th)
			over = over || o
			ss.Signals = append(ss.Signals, SignalStatus{Signal: sig.String(), Value: finite(s.value[i]), Threshold: th.of(sig),
				Judged: s.judged[i], Over: o, OverSince: at(s.overSince[i])})
		}
		switch {
		case d.ops[s.key]:
			ss.State, ss.Signal = "quarantined", Operator.String()
		case s.signal != None:
			ss.State, ss.Signal, ss.Since = "quarantined", s.signal.String(), at(s.since)
			until := s.since.Add(set.TTL)
			calm := st.Now.Add(set.Calm)
			if !s.calmSince.IsZero() {
				calm = s.calmSince.Add(set.Calm)
			}
			if calm.After(until) {
				until = calm
			}
			ss.Until = &until
		case s.refused:
			ss.State = "refused"
		case over:
			ss.State = "over"
		case !s.warm(set.MinSamples):
			ss.State = "learning"
		}
		st.Seats = append(st.Seats, ss)
	}
	for _, k := range sortedKeys(d.ops) {
		if !tracked[k] {
			st.Seats = append(st.Seats, SeatStatus{Seat: k, State: "quarantined", Signal: Operator.String()})
		}
	}
	sort.SliceStable(st.Seats, func(i, j int) bool {
		qi, qj := st.Seats[i].State == "quarantined", st.Seats[j].State == "quarantined"
		if qi != qj {
			return qi
		}
		return st.Seats[i].Seat < st.Seats[j].Seat
	})
	return st
}

// finite keeps JSON encodable: signal values are finite by construction,
// this is the belt to that.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return math.MaxFloat64
	}
	return v
}
