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
	ValveWindow    string  `json:"valve_window"`
	MaxTTL         string  `json:"max_ttl"`
	PriceDrop      float64 `json:"price_drop"`
	// ActiveSeats have had at least minSamples bids in their window in the
	// last valveWindow: the safety valve's denominator.
	ActiveSeats int `json:"active_seats"`
	// ValveSeats have been quarantined by the detector, or over a
	// threshold, in the last valveWindow: the valve's numerator.
	ValveSeats int `json:"valve_seats"`
	// Shift is true while the safety valve refuses every quarantine.
	Shift            bool `json:"shift"`
	TrackedSeats     int  `json:"tracked_seats"`
	MaxSeats         int  `json:"max_seats"`
	QuarantinedSeats int  `json:"quarantined_seats"`
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
	// every signal stays under its threshold (none for operator seats);
	// Hold is the quarantine's length before calm: ttl, doubled for each
	// flap, up to maxTTL.
	Since    *time.Time `json:"since,omitempty"`
	Hold     string     `json:"hold,omitempty"`
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
	// Low and LowThreshold are the price signal's lower side: the smaller
	// of window median / baseline median and window p5 / baseline p5, over
	// when under priceDrop.
	Low          float64 `json:"low,omitempty"`
	LowThreshold float64 `json:"low_threshold,omitempty"`
}

// Status reports every tracked seat and every operator seat.
func (d *Detector) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	set := &d.set
	st := Status{
		Enabled: set.Enabled, Now: d.now(), Window: set.Window.String(), BaselineWindow: set.BaselineWindow.String(),
		Dwell: set.Dwell.String(), TTL: set.TTL.String(), Calm: set.Calm.String(), MinSamples: set.MinSamples,
		MaxShare: set.MaxShare, ValveWindow: set.ValveWindow.String(), MaxTTL: set.MaxTTL.String(), PriceDrop: set.PriceDrop,
		Shift: d.shift, TrackedSeats: len(d.seats), MaxSeats: int(d.tab.max.Load()), QuarantinedSeats: int(d.any.Load()),
		Seats: []SeatStatus{},
	}
	st.ActiveSeats, st.ValveSeats = d.valveCounts(st.Now)
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	tracked := map[string]bool{}
	for _, s := range d.seats {
		tracked[s.key] = true
		ss := SeatStatus{Seat: s.key, State: "normal", LastSeen: at(s.lastSeen), Bids: s.win.bids}
		th := d.thresholds(s.key)
		over := false
		for i, sig := range Measured() {
			o := s.over(i, &th)
			over = over || o
			sst := SignalStatus{Signal: sig.String(), Value: finite(s.value[i]), Threshold: th.of(sig),
				Judged: s.judged[i], Over: o, OverSince: at(s.overSince[i])}
			if sig == Price {
				sst.Low, sst.LowThreshold = finite(s.low), set.PriceDrop
			}
			ss.Signals = append(ss.Signals, sst)
		}
		switch {
		case d.ops[s.key]:
			ss.State, ss.Signal = "quarantined", Operator.String()
		case s.signal != None:
			ss.State, ss.Signal, ss.Since, ss.Hold = "quarantined", s.signal.String(), at(s.since), s.hold.String()
			until := s.since.Add(s.hold)
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
