package engine

import (
	"strings"

	"github.com/bidguard/bidguard/config"
)

// SeatStates tells the quarantine gate which seats are quarantined (docs/design.md
// "Anomaly detection and quarantine"). One value is shared by every request:
// it must be safe for concurrent use, and its methods must not block,
// allocate, or retain their arguments.
type SeatStates interface {
	// Any reports whether any seat may be quarantined now. When it is false
	// the quarantine gate skips the request.
	Any() bool
	// Quarantined returns the signal the bids of seat (seatbid.seat as sent)
	// from upstream ("" in check) are quarantined for: "rejections",
	// "price", "novelty", "velocity" or "operator"; "" when they are not.
	Quarantined(upstream, seat string) string
}

// SignalOperator is the signal of a seat listed in quarantine.seats.
const SignalOperator = "operator"

// operatorSeats is the SeatStates of quarantine.seats alone, which is all
// check applies (no detector runs there). An entry "<upstream>/<seat>"
// quarantines that upstream's seat, a bare entry the seat on every upstream;
// with no upstream (check) only bare entries apply.
type operatorSeats struct {
	bare      map[string]bool
	qualified map[[2]string]bool
}

// operatorStates returns the SeatStates of cfg's quarantine.seats, or nil
// when it lists none. Config validation makes every entry with a '/' name an
// upstream.
func operatorStates(cfg *config.Config) SeatStates {
	if len(cfg.Quarantine.Seats) == 0 {
		return nil
	}
	o := &operatorSeats{bare: map[string]bool{}, qualified: map[[2]string]bool{}}
	for _, s := range cfg.Quarantine.Seats {
		if up, seat, ok := strings.Cut(s, "/"); ok {
			o.qualified[[2]string{up, seat}] = true
		} else {
			o.bare[s] = true
		}
	}
	return o
}

func (o *operatorSeats) Any() bool { return true }

func (o *operatorSeats) Quarantined(upstream, seat string) string {
	if o.bare[seat] || (upstream != "" && o.qualified[[2]string{upstream, seat}]) {
		return SignalOperator
	}
	return ""
}
