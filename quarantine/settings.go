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
	// Price is the upper side of the price signal: the larger of window
	// median / baseline median and window p95 / baseline p95 (> 0). Its
	// lower side is Settings.PriceDrop, for every seat.
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

// Defaults of the settings the config leaves out. A zero ValveWindow,
// MaxTTL, PriceDrop or MaxSeats in Settings means its default.
const (
	// DefaultValveWindow is how far back the safety valve looks.
	DefaultValveWindow = 5 * time.Minute
	// DefaultMaxTTL caps the hold of a flapping seat (ttl 10m: 10m, 20m,
	// 40m, 80m, then 2h).
	DefaultMaxTTL = 2 * time.Hour
	// DefaultPriceDrop: a window median (or p5) under 0.55 of the baseline's
	// is a price signal, the mirror of DefaultThresholds.Price (1/1.8).
	DefaultPriceDrop = 0.55
	// DefaultMaxSeats is the most seats tracked at once.
	DefaultMaxSeats = 20000
)

// DefaultThresholds are the thresholds of a config that sets none. Price
// 1.8 catches a sustained doubling (or, with DefaultPriceDrop, a halving)
// of a seat's prices within two minutes at the default window and dwell;
// lognormal noise of σ 0.3 around a constant reads under 1.3.
var DefaultThresholds = Thresholds{Rejections: 0.5, Price: 1.8, Novelty: 0.8, Velocity: 10}

// Defaults returns the settings of a config that sets nothing but
// enabled.
func Defaults() Settings {
	return Settings{
		Window: time.Minute, BaselineWindow: time.Hour, Dwell: 30 * time.Second, TTL: 10 * time.Minute,
		Calm: 2 * time.Minute, MinSamples: 100, MaxShare: 0.5, Thresholds: DefaultThresholds,
		ValveWindow: DefaultValveWindow, MaxTTL: DefaultMaxTTL, PriceDrop: DefaultPriceDrop, MaxSeats: DefaultMaxSeats,
	}
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
	// TTL is the shortest quarantine: the first hold of a seat.
	TTL time.Duration
	// Calm is how long every signal must stay under its threshold, after
	// the hold, before a release.
	Calm time.Duration
	// MinSamples is the number of bids (priced bids for the price signal) a
	// window and a baseline must hold before a signal is judged; a seat's
	// price histograms and novelty sketches are allocated once it has sent
	// that many bids.
	MinSamples int
	// MaxShare is the largest share of the seats active in the last
	// ValveWindow that may have been quarantined by the detector, or over a
	// threshold, in the last ValveWindow.
	MaxShare float64
	// ValveWindow is how far back the safety valve looks (0:
	// DefaultValveWindow).
	ValveWindow time.Duration
	// MaxTTL caps the hold of a flapping seat, which doubles from TTL with
	// each quarantine that follows a release by less than the last hold
	// (0: DefaultMaxTTL, or TTL when that is longer; else >= TTL).
	MaxTTL time.Duration
	// PriceDrop is the price signal's other side: a window median or p5
	// under this fraction of the baseline's is over, in (0, 1) (0:
	// DefaultPriceDrop).
	PriceDrop float64
	// MaxSeats bounds the tracked seats (0: DefaultMaxSeats).
	MaxSeats int
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

// withDefaults returns s with its zero optional settings defaulted.
func (s Settings) withDefaults() Settings {
	if s.ValveWindow == 0 {
		s.ValveWindow = DefaultValveWindow
	}
	if s.MaxTTL == 0 {
		s.MaxTTL = max(DefaultMaxTTL, s.TTL)
	}
	if s.PriceDrop == 0 {
		s.PriceDrop = DefaultPriceDrop
	}
	if s.MaxSeats == 0 {
		s.MaxSeats = DefaultMaxSeats
	}
	return s
}

// Validate returns every invalid setting, each error naming its key as the
// config file spells it ("quarantine.window: must be > 0"); none when s is
// valid. It is the one check of these values: config validation reports
// its errors at every load, and Update refuses settings it rejects. A zero
// ValveWindow, MaxTTL, PriceDrop or MaxSeats means its default.
func (s *Settings) Validate() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
		zero bool
	}{{"window", s.Window, false}, {"baselineWindow", s.BaselineWindow, false}, {"dwell", s.Dwell, true},
		{"ttl", s.TTL, false}, {"calm", s.Calm, true}, {"valveWindow", s.ValveWindow, true}} {
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
	if s.MaxTTL < 0 || (s.MaxTTL > 0 && s.MaxTTL < s.TTL) {
		errs = append(errs, fmt.Errorf("quarantine.maxTTL: must be >= ttl (%v; 0: the larger of %v and ttl)", s.TTL, DefaultMaxTTL))
	}
	if !(s.PriceDrop >= 0 && s.PriceDrop < 1) {
		errs = append(errs, fmt.Errorf("quarantine.priceDrop: must be in (0, 1) (0: %v)", DefaultPriceDrop))
	}
	if s.MaxSeats < 0 {
		errs = append(errs, fmt.Errorf("quarantine.maxSeats: must be >= 0 (0: %d)", DefaultMaxSeats))
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
