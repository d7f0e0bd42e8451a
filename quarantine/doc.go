// Package quarantine is bidguard's anomaly detector and seat quarantine
// state machine (DESIGN.md "Anomaly detection and quarantine"). It imports
// only the standard library and no bidguard package: package config turns
// the config into Settings (and reports what Settings.Validate refuses at
// every load), cmd/bidguard feeds it judged bids, hands Detector to the engine
// as the quarantine gate's engine.SeatStates, serves its admin Handler and
// turns its Events into audit records and metrics.
//
// # Seats
//
// A seat is keyed by seatbid.seat, or by "<upstream>/<seat>" when a seat
// policy has that key (Settings.Qualified): the same key that picks its
// policy and its seats.<key>.quarantine thresholds. Seats are tracked from
// their first bid, up to Options.MaxSeats (DefaultMaxSeats, 4096); a full
// table takes no new seat (its bids are counted as untracked and logged at
// most once a minute) until the next tick forgets the least recently seen
// sixteenth of the seats, never a quarantined one. A forgotten seat that
// bids again starts over.
//
// # Memory and the bid path
//
// Each seat's state is constant, about 4.8 KiB whatever its traffic:
//
//   - pending counts the bid path adds to between ticks (bids, rejected,
//     novel, and a 64-bin price histogram: 268 bytes of atomics);
//   - the window: 6 sub-buckets of window/6 each with the same counts
//     (1.6 KiB), and their sum;
//   - the baseline: a decayed 64-bin price histogram, decayed bid counts and
//     an EWMA of the bid rate (300 bytes);
//   - the novelty sketches: four 4096-bit Bloom filters (2 KiB), below.
//
// Seat and Seat.Observe take no lock for a known seat (the seat index is an
// immutable map behind an atomic pointer, rebuilt each tick) and allocate
// nothing: finding the seat and observing a bid with a crid and one adomain
// cost about 45 ns of CPU (BenchmarkObserve, cpu-ns/op). Crid and adomain
// are hashed with hash/maphash and never kept; the seat key is copied once,
// when the seat is created.
//
// # Signals
//
// Measured every tick over the window (6 sub-buckets; the newest is
// partial):
//
//   - rejections: rejected bids / bids (rejections by a gate other than the
//     quarantine gate, would-be rejections under action: shadow included);
//   - price: the larger of window median / baseline median and window p95 /
//     baseline p95, from log-scale histograms with two bins an octave
//     (quantiles interpolated within a bin): a tenfold jump moves both
//     tenfold, a few outliers move neither much;
//   - novelty: the share of bids whose crid or one of its first four adomain
//     entries the baseline's sketch has never seen;
//   - velocity: the window's bids per second over the baseline's, the
//     baseline rate floored at minSamples per window (so a seat that wakes
//     from a trickle needs ten times minSamples a window to trip it).
//
// A signal is judged only with at least minSamples bids in the window
// (priced bids, and as many in the baseline, for price). The rejection rate
// needs no baseline; price and velocity are judged once the baseline holds
// a whole window of sub-buckets and minSamples bids (two windows after the
// seat's first bid); novelty once the sketch holds a whole window of the
// seat's values and the window only bids probed against it (four window
// boundaries after the first bid).
//
// # The baseline
//
// When a sub-bucket leaves the window it is folded into the baseline, whose
// content decays by e^(-sub/baselineWindow) per fold: an exponentially
// decaying baseline with time constant baselineWindow, lagging the window
// by one window. Only sub-buckets holding bids are folded: a seat that goes
// quiet (at night) keeps the baseline of what it did before. A slow drift
// is followed (a price that doubles every two hours reads about 1.4 against
// a one-hour baseline), a step is not. The baseline learns nothing while
// the seat is quarantined or has a signal over its threshold (unless the
// safety valve refused it): an anomaly never becomes normal by lasting.
//
// Novelty uses two pairs of sketches. The bid path adds every value to
// cur[gen]; at each window boundary the other cur sketch (values one to two
// windows old) is merged into the newest seen sketch and emptied, and gen
// flips. The two seen sketches are generations of one baseline window of
// the seat's activity each; a value is seen when either holds it. A value
// therefore stays novel for one to two windows after its first bid: long
// enough for the dwell when the dwell is shorter than the window (while a
// signal is over, the sketch learns nothing either).
//
// # The state machine
//
// Evaluated by Tick, off the bid path, on the detector's clock:
//
//   - A seat is quarantined when a signal has stayed over its threshold for
//     dwell (the one over longest is its signal), unless the safety valve
//     holds it back.
//   - Safety valve: when the seats the detector quarantined plus the seats
//     with a signal over its threshold would exceed maxShare of the active
//     seats (at least minSamples bids in their window), no new seat is
//     quarantined: a shift that wide is more likely bidguard's or the
//     exchange's (a config change, a currency, a floor) than the seats'.
//     Each refusal is a Refused event once per episode (metered), one
//     ERROR line is logged at most once a minute, and the refused seats'
//     baselines keep learning, so a fleet-wide shift becomes the new normal.
//     With maxShare 0.5 a single active seat is never quarantined; a
//     one-seat deployment sets maxShare: 1.
//   - A quarantined seat is released once ttl has passed and every signal
//     has been under its threshold, with minSamples bids in the window, for
//     calm (hysteresis: a flapping seat stays in). Too few bids is not calm.
//   - An operator releases a seat with Release (POST
//     /quarantine/<seat>/release): its baseline and sketches are forgotten,
//     so what it sends from then on is its new normal. A seat whose new
//     behaviour is legitimate stays quarantined until an operator does so.
//   - quarantine.seats entries (signal operator) are quarantined as long as
//     the config lists them, whatever the detector says; the detector never
//     releases them, Release refuses them, and removing them from the
//     config releases them. They apply with the detector off too.
//   - Settings.Enabled false: nothing is tracked, detector quarantines are
//     released. A restart starts clean (a new Detector knows nothing) and
//     the first Update says so in the log.
//
// # Concurrency
//
// Seat, Seat.Observe, Any, Quarantined, Count and Enabled are lock-free and
// safe for concurrent use. Tick, Update, Release and Status serialise on one
// mutex the bid path never takes; Options.OnEvent is called after it is
// released.
package quarantine
