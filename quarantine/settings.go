package quarantine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Signal is what a seat is quarantined for.
type Signal uint8

// Signals. The detector measures the first four; Operator is a seat listed
// in quarantine.seats.
const (
	None Signal = iota
	Rejections
	Price
	Novelty
	Velocity
	Operator
)

// numMeasured is the number of signals the detector measures.
const numMeasured = 4

var signalNames = [...]string{"", "rejections", "price", "novelty", "velocity", "operator"}

// String is the signal's name in reasons, metrics and the admin endpoint
// ("" for None).
func (s Signal) String() string {
	if int(s) < len(signalNames) {
		return signalNames[s]
	}
	return "unknown"
}

// Measured lists the signals the detector measures, in the order a tie
// between two signals over their thresholds is broken.
func Measured() []Signal { return []Signal{Rejections, Price, Novelty, Velocity} }

// Thresholds are the signals' thresholds; a signal is over when its value
// is greater.
type Thresholds struct {
	// Rejections is the share of the seat's bids in the window that a gate
	// (not the quarantine gate) rejected, in (0, 1].
	Rejections float64
	// Price is the larger of window median / baseline median and window p95
	// / baseline p95 (> 0).
	Price float64
	// Novelty is the share of bids in the window whose crid or an adomain
	// entry the baseline never saw, in (0, 1].
	Novelty float64
	// Velocity is the window's bid rate over the baseline rate (> 0).
	Velocity float64
}

func (t *Thresholds) of(s Signal) float64 {
	switch s {
	case Rejections:
		return t.Rejections
	case Price:
		return t.Price
	case Novelty:
		return t.Novelty
	}
	return t.Velocity
}

// Validate returns every threshold out of its range, each error naming its
// key under path ("quarantine.thresholds", `seat "a": quarantine`).
func (t Thresholds) Validate(path string) []error {
	var errs []error
	if !(t.Rejections > 0 && t.Rejections <= 1) {
		errs = append(errs, fmt.Errorf("%s.rejections: must be in (0, 1]", path))
	}
	if !(t.Novelty > 0 && t.Novelty <= 1) {
		errs = append(errs, fmt.Errorf("%s.novelty: must be in (0, 1]", path))
	}
	if !(t.Price > 0) || !(t.Velocity > 0) {
		errs = append(errs, fmt.Errorf("%s: price and velocity must be > 0", path))
	}
	return errs
}

// Settings are the detector's configuration: the quarantine block of the
// config with each seat's overrides applied (config.Config.QuarantineSettings
// converts it). Update applies a new value at any time.
type Settings struct {
	// Enabled runs the detector; false keeps only the operator seats.
	Enabled bool
	// Window is the sliding window the signals are measured over.
	Window time.Duration
	// BaselineWindow is the time constant of the seat's decaying baseline.
	BaselineWindow time.Duration
	// Dwell is how long a signal must stay over its threshold.
	Dwell time.Duration
	// TTL is the shortest quarantine.
	TTL time.Duration
	// Calm is how long every signal must stay under its threshold, after
	// TTL, before a release.
	Calm time.Duration
	// MinSamples is the number of bids (priced bids for the price signal) a
	// window and a baseline must hold before a signal is judged.
	MinSamples int
	// MaxShare is the largest share of active seats that may be
	// quarantined by the detector at once.
	MaxShare float64
	// Thresholds apply to every seat without an override.
	Thresholds Thresholds
	// Overrides are per-seat thresholds, by seat key (seats.<key>.quarantine
	// applied over Thresholds).
	Overrides map[string]Thresholds
	// Operator lists the operator-quarantined seats (quarantine.seats): a
	// bare seat, or "<upstream>/<seat>".
	Operator []string
	// Qualified lists the "<upstream>/<seat>" keys of seat policies: bids
	// of such a seat from that upstream are tracked under that key, every
	// other seat under seatbid.seat alone.
	Qualified []string
	// Version is the config version, handed on in events.
	Version string
}

// sub is the length of a window's sub-bucket (at least 1ns).
func (s *Settings) sub() time.Duration { return max(s.Window/ringSize, 1) }

// Validate returns every invalid setting, each error naming its key as the
// config file spells it ("quarantine.window: must be > 0"); none when s is
// valid. It is the one check of these values: config validation reports
// its errors at every load, and Update refuses settings it rejects.
func (s *Settings) Validate() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
		zero bool
	}{{"window", s.Window, false}, {"baselineWindow", s.BaselineWindow, false}, {"dwell", s.Dwell, true},
		{"ttl", s.TTL, false}, {"calm", s.Calm, true}} {
		switch {
		case d.v < 0 && d.zero:
			errs = append(errs, fmt.Errorf("quarantine.%s: must not be negative", d.name))
		case d.v <= 0 && !d.zero:
			errs = append(errs, fmt.Errorf("quarantine.%s: must be > 0", d.name))
		}
	}
	if s.MinSamples <= 0 {
		errs = append(errs, errors.New("quarantine.minSamples: must be > 0"))
	}
	if !(s.MaxShare > 0 && s.MaxShare <= 1) {
		errs = append(errs, errors.New("quarantine.maxShare: must be in (0, 1]"))
	}
	errs = append(errs, s.Thresholds.Validate("quarantine.thresholds")...)
	for _, k := range slices.Sorted(maps.Keys(s.Overrides)) {
		errs = append(errs, s.Overrides[k].Validate(fmt.Sprintf("seat %q: quarantine", k))...)
	}
	for _, o := range s.Operator {
		if o == "" {
			errs = append(errs, errors.New("quarantine.seats: a seat may not be empty"))
		}
	}
	for _, q := range s.Qualified {
		if !strings.Contains(q, "/") {
			errs = append(errs, fmt.Errorf("qualified seat key %q has no '/'", q))
		}
	}
	return errs
}
