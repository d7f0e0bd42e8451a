// Package quarantine is bidguard's anomaly detector and seat quarantine
// state machine (docs/design.md, "Anomaly detection and quarantine"). It
// imports only the standard library and no bidguard package: package config
// turns the config into Settings (and reports what Settings.Validate refuses
// at every load), cmd/bidguard feeds it judged bids, hands Detector to the
// engine as the quarantine gate's engine.SeatStates, serves its admin Handler
// and turns its Events into audit records and metrics.
//
// # Seats
//
// A seat is keyed by seatbid.seat, or by "<upstream>/<seat>" when a seat
// policy has that key (Settings.Qualified): the same key that picks its
// policy and its seats.<key>.quarantine thresholds. Seats are tracked from
// their first bid, up to Settings.MaxSeats (DefaultMaxSeats, 20,000). The
// table keeps a sixteenth of it free for the seats that arrive between two
// ticks: when less is free, a tick forgets idle seats (no bid for two
// windows), least recently seen first. Only when new seats were turned away
// (a table full of seats that are not idle: their bids are counted as
// untracked and logged at most once a minute) does the least recently seen
// sixteenth go whatever its activity; a lowered maxSeats cuts the table at
// the next tick. A quarantined seat is never forgotten; a forgotten seat
// that bids again starts over.
//
// # Memory and the bid path
//
// A seat's state is constant whatever its traffic, in two parts:
//
//   - the seat (576 bytes): the bid path's pending counts (bids, rejected,
//     novel), the window's six sub-buckets of counts and their sum, the
//     baseline's decayed bid counts and rate, the state machine;
//   - its detail (4 KiB), allocated by the tick after the seat has sent
//     minSamples bids (a seat that never sends that many could never be
//     judged on them): the pending prices (a 64-bin histogram of atomics),
//     the six sub-buckets' price histograms, the baseline's decayed price
//     histogram, and the four 4096-bit novelty sketches (2 KiB), below.
//
// Measured over 10,000 seats with the table's index, list and key
// (TestBytesPerTrackedSeat, runtime.MemStats): 687 bytes per tracked seat
// before its first minSamples bids, 4,787 after; 20,000 seats with their
// details are about 96 MB of live heap (a churn of seats that each bid a
// few times stays near 14 MB, TestSeatTableChurnStaysFlat). Before the
// detail was split off every seat weighed 4,912 bytes from its first bid.
// The process's RSS is larger than the live heap by the garbage
// collector's headroom (GOGC).
//
// Seat and Seat.Observe take no lock for a known seat (the seat index is an
// immutable map behind an atomic pointer, rebuilt each tick) and allocate
// nothing: finding the seat and observing a bid with a crid and one adomain
// cost about 55 ns of CPU (BenchmarkObserve, cpu-ns/op). Crid and adomain
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
//   - price, two-sided: over when the larger of window median / baseline
//     median and window p95 / baseline p95 is over the price threshold
//     (default 1.8), or when the smaller of window median / baseline median
//     and window p5 / baseline p5 is under priceDrop (default 0.55), from
//     log-scale histograms with two bins an octave (quantiles interpolated
//     within a bin; prices under the lowest bin, zero included, read as
//     equal). A sustained doubling or halving is quarantined within two
//     minutes at the defaults (53 s up, 60 s down in the simulation), a
//     tenfold move in about 33 s; lognormal noise of σ 0.3 reads between
//     0.82 and 1.16. A few outliers move neither side much;
//   - novelty: the share of bids whose crid or one of its first four adomain
//     entries the baseline's sketch has never seen;
//   - velocity: the window's bids per second over the baseline's, the
//     baseline rate floored at minSamples per window (so a seat that wakes
//     from a trickle needs ten times minSamples a window to trip it).
//
// A signal is judged only with at least minSamples bids in the window
// (priced bids, and as many in the baseline, for price). The rejection rate
// needs no baseline; price and velocity are judged once the baseline holds
// a whole window of sub-buckets and minSamples bids (price: priced bids
// observed since the detail was allocated); novelty once the sketch has
// learned at four window boundaries since the detail was allocated (a
// whole window of the seat's values, and a window of bids all probed
// against it). Boundaries at which the seat was quarantined or over a
// threshold do not count: its sketch learned nothing then.
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
// the seat is quarantined or has a signal over (or, for price, under) its
// threshold, unless the safety valve holds: a shift never becomes normal
// during its dwell, and an anomaly never becomes normal by lasting.
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
//   - Safety valve: the seats the detector quarantined, or that had a
//     signal over its threshold, at any tick of the last valveWindow
//     (default 5m) are counted against maxShare of the seats active
//     (minSamples bids in their window) at any tick of it. While they are
//     more, no seat is quarantined: a shift that wide is more likely
//     bidguard's or the exchange's (a config change, a currency, a floor)
//     than the seats'. Judged over a window, not one tick, a shift whose
//     seats cross the threshold at different moments, or dip under it and
//     back, is still one shift. When a shift begins, the detector's
//     quarantines of the last valveWindow (its first seats, taken before it
//     was wide) are undone. Each refusal is a Refused event once per seat
//     and shift (metered), one ERROR line is logged at most once a minute,
//     and while the valve holds the seats over a threshold keep learning,
//     so a fleet-wide price, novelty or velocity shift becomes the new
//     normal. The shift ends when the count falls back to maxShare (the
//     seats back under their thresholds for valveWindow); a refused or
//     undone seat still over its threshold then dwells again before it is
//     quarantined. With maxShare 0.5 a single active seat is never
//     quarantined; a one-seat deployment sets maxShare: 1.
//   - A quarantined seat is released once its hold has passed and every
//     signal has been under its threshold, with minSamples bids in the
//     window, for calm (hysteresis: a flapping seat stays in). Too few bids
//     is not calm. The hold is ttl; a seat quarantined again less than its
//     last hold after its release is flapping, and its hold doubles (base
//     ttl, factor 2, cap maxTTL, default 2h: 10m, 20m, 40m, 80m, 2h at the
//     defaults). A seat that stays out for as long as its last hold starts
//     over at ttl.
//   - An operator releases a seat with Release (POST
//     /quarantine/<seat>/release): its baseline, sketches and flapping
//     history are forgotten, so what it sends from then on is its new
//     normal. A seat whose new behaviour is legitimate stays quarantined
//     until an operator does so.
//   - quarantine.seats entries (signal operator) are quarantined as long as
//     the config lists them, whatever the detector says; the detector never
//     releases them, Release refuses them, and removing them from the
//     config releases them. They apply with the detector off too.
//   - Settings.Enabled false: nothing is tracked, detector quarantines are
//     released. A restart starts clean (a new Detector knows nothing) and
//     the first Update says so in the log.
//
// # Settings
//
// Settings.Validate names every invalid key at once; Update refuses what it
// refuses. ValveWindow, MaxTTL, PriceDrop and MaxSeats take their default
// when zero; Defaults returns every default.
//
// # Concurrency
//
// Seat, Seat.Observe, Any, Quarantined, Count and Enabled are lock-free and
// safe for concurrent use. Tick, Update, Release and Status serialise on one
// mutex the bid path never takes; Options.OnEvent is called after it is
// released.
package quarantine
