package quarantine

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Tick measures every seat and moves seats in and out of quarantine; Run
// calls it every TickEvery. Each tick: the seats created since the last one
// join the index; each seat's pending counts join its window, sub-buckets
// leaving the window fold into its baseline (not while it is quarantined or
// over a threshold: the baseline never learns an anomaly), the sketches
// rotate at window and baseline-window boundaries; then the signals are
// measured, the state machine and the safety valve run, and idle seats are
// evicted from a nearly full table. Events are emitted after the lock is
// released.
func (d *Detector) Tick() {
	d.mu.Lock()
	ev := d.tick(d.now())
	d.mu.Unlock()
	d.emit(ev)
}

func (d *Detector) tick(now time.Time) []Event {
	set := &d.set
	if !set.Enabled {
		return nil
	}
	d.seats = d.tab.rebuild(nil, d.seats)
	d.slide(now)

	var ev []Event
	add := func(kind EventKind, s *Seat, sig Signal, reason string) {
		ev = append(ev, Event{Kind: kind, Seat: s.key, Signal: sig, Reason: reason, At: now, Version: set.Version})
	}
	covered := time.Duration(ringSize-1)*set.sub() + now.Sub(time.Unix(0, d.epoch*int64(set.sub())))
	for _, s := range d.seats {
		th := d.thresholds(s.key)
		s.measure(set, min(now.Sub(s.born), covered))
		anyOver := false
		for i := range s.overSince {
			if s.over(i, &th) {
				anyOver = true
				if s.overSince[i].IsZero() {
					s.overSince[i] = now
				}
			} else {
				s.overSince[i] = time.Time{}
			}
		}
		if s.win.bids >= uint32(set.MinSamples) {
			s.active = now
		}
		if anyOver || s.signal != None {
			s.pressed = now
		}
		if s.signal == None {
			continue
		}
		if anyOver || s.win.bids < uint32(set.MinSamples) {
			s.calmSince = time.Time{} // unknown is not calm
		} else if s.calmSince.IsZero() {
			s.calmSince = now
		}
		if !now.Before(s.since.Add(s.hold)) && !s.calmSince.IsZero() && now.Sub(s.calmSince) >= set.Calm {
			reason := fmt.Sprintf("every signal under its threshold for %v after ttl %v", set.Calm, set.TTL)
			if s.strikes > 0 {
				reason = fmt.Sprintf("every signal under its threshold for %v after a hold of %v (ttl %v doubled %d times: flapping)", set.Calm, s.hold, set.TTL, s.strikes)
			}
			add(Released, s, s.signal, reason)
			d.release(s, now)
		}
	}

	active, pressure := d.valveCounts(now)
	wide := float64(pressure) > set.MaxShare*float64(active)
	if d.shift && !wide {
		d.endShift(now)
	}
	var candidates []*Seat
	for _, s := range d.seats {
		if _, ok := s.dwelt(now, set.Dwell); ok && s.signal == None {
			candidates = append(candidates, s)
		}
	}
	switch {
	case len(candidates) > 0 && wide:
		d.refuse(candidates, pressure, active, now, add)
	default:
		for _, s := range candidates {
			d.quarantine(s, now, add)
		}
	}
	for _, s := range d.seats {
		over := false
		for i := range s.overSince {
			over = over || !s.overSince[i].IsZero()
		}
		// While the valve holds, the seats over a threshold keep learning:
		// a fleet-wide shift becomes the new normal.
		s.paused = s.signal != None || (over && !d.shift)
	}
	d.evict(now)
	d.recount()
	return ev
}

// slide drains every seat's pending counts into its window, slides the
// windows to now (folding what leaves them into the baselines), allocates
// the detail of seats that have sent minSamples bids, and rotates the
// novelty sketches at window boundaries.
func (d *Detector) slide(now time.Time) {
	set := &d.set
	sub := set.sub()
	ns := now.UnixNano()
	epoch, winEpoch := ns/int64(sub), ns/int64(set.Window)
	if d.epoch == 0 || epoch < d.epoch { // first tick, new window length, or the clock went back
		d.epoch, d.winEpoch = epoch, winEpoch
	}
	alpha := math.Exp(-float64(sub) / float64(set.BaselineWindow))
	seenEvery := max(1, int(set.BaselineWindow/sub)) // active sub-buckets per seen generation
	rotateCur := winEpoch > d.winEpoch
	older := 1 - d.gen.Load()&1
	for _, s := range d.seats {
		if s.born.IsZero() {
			s.born = now
		}
		if s.drain(int(d.epoch % ringSize)) {
			s.lastSeen = now
		}
		s.grow(set.MinSamples)
		s.advance(d.epoch, epoch, alpha, sub)
		dt := s.det.Load()
		if dt == nil {
			continue
		}
		if rotateCur {
			// Novelty counts only the boundaries at which the sketch
			// learned: a seat quarantined before its sketch held a window
			// of its values would otherwise read all novel, never calm.
			if !s.paused {
				dt.seen[s.seenNew].merge(&dt.cur[older])
				if !s.lastSeen.IsZero() {
					s.rotations++
				}
			}
			dt.cur[older].clear()
		}
		if s.folded >= seenEvery {
			// The seen generations age with the seat's activity, as its
			// baseline does: a seat that goes quiet keeps its values.
			s.folded = 0
			s.seenNew = 1 - s.seenNew
			dt.seen[s.seenNew].clear()
		}
	}
	if rotateCur {
		d.gen.Store(older) // emptied above: the bid path adds to it from now on
	}
	d.epoch, d.winEpoch = epoch, winEpoch
}

// valveCounts are the safety valve's numbers over the last valveWindow: the
// seats active in it (minSamples bids in their window at some tick), and
// the seats quarantined by the detector, or over a threshold, at some tick
// of it (every seat the detector holds now included).
func (d *Detector) valveCounts(now time.Time) (active, pressure int) {
	within := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < d.set.ValveWindow }
	for _, s := range d.seats {
		if within(s.active) {
			active++
		}
		if s.signal != None || within(s.pressed) {
			pressure++
		}
	}
	return active, pressure
}

// endShift ends the valve's hold: the seats it refused that are still over
// a threshold dwell again from now before they can be quarantined.
func (d *Detector) endShift(now time.Time) {
	d.shift = false
	n := 0
	for _, s := range d.seats {
		if !s.refused {
			continue
		}
		s.refused = false
		for i := range s.overSince {
			if !s.overSince[i].IsZero() {
				s.overSince[i] = now
				n++
			}
		}
	}
	d.log.Info("quarantine safety valve: the shift is over; seats still over a threshold dwell again before a quarantine",
		"stillOver", n, "valveWindow", d.set.ValveWindow)
}

// quarantine puts s in quarantine for its dwelt signal. Its hold is ttl,
// doubled for each quarantine that followed the previous release by less
// than the previous hold (a flapping seat), up to maxTTL.
func (d *Detector) quarantine(s *Seat, now time.Time, add func(EventKind, *Seat, Signal, string)) {
	set := &d.set
	sig, _ := s.dwelt(now, set.Dwell)
	th := d.thresholds(s.key)
	v, limit, under := s.reading(sig, &th)
	side := "over"
	if under {
		side = "under"
	}
	reason := fmt.Sprintf("%s %s threshold %s for %v", formatFloat(v), side, formatFloat(limit), set.Dwell)
	strikes := 0
	if !s.released.IsZero() && now.Sub(s.released) < s.hold {
		strikes = min(s.strikes+1, maxStrikes)
	}
	hold := set.TTL
	for range strikes {
		hold = min(2*hold, set.MaxTTL)
	}
	if strikes > 0 {
		reason += fmt.Sprintf("; held %v: quarantined again %v after its release", hold, now.Sub(s.released))
	}
	add(Quarantined, s, sig, reason)
	s.signal, s.since, s.calmSince, s.refused = sig, now, time.Time{}, false
	s.hold, s.strikes = hold, strikes
	s.state.Store(uint32(sig))
}

// maxStrikes bounds the doublings counted (the hold is capped at maxTTL
// long before).
const maxStrikes = 32

// dwelt returns the signal that has been over its threshold longest, when
// that is at least dwell (ties go to the first in Measured order).
func (s *Seat) dwelt(now time.Time, dwell time.Duration) (Signal, bool) {
	best := -1
	for i, t := range s.overSince {
		if !t.IsZero() && now.Sub(t) >= dwell && (best < 0 || t.Before(s.overSince[best])) {
			best = i
		}
	}
	if best < 0 {
		return None, false
	}
	return Signal(best + 1), true
}

// refuse is the safety valve: the seats quarantined or over a threshold in
// the last valveWindow are more than maxShare of the seats active in it. A
// shift that wide is more likely ours or the exchange's than the seats':
// none is quarantined until the shift ends (endShift), each refusal is an
// event (metered) once per seat and shift, and one loud line is logged at
// most once a minute.
//
// A shift that reaches the seats over longer than the dwell has its first
// seats quarantined before it is seen as a shift: when a shift begins, the
// detector's quarantines of the last valveWindow are undone (Released,
// with the valve's reason) and retried after the shift ends, like the
// refused seats.
func (d *Detector) refuse(candidates []*Seat, pressure, active int, now time.Time, add func(EventKind, *Seat, Signal, string)) {
	reason := fmt.Sprintf("safety valve: %d of %d active seats quarantined or over a threshold, over maxShare %v, in the last %v",
		pressure, active, d.set.MaxShare, d.set.ValveWindow)
	if !d.shift {
		for _, s := range d.seats {
			if s.signal != None && now.Sub(s.since) < d.set.ValveWindow {
				add(Released, s, s.signal, fmt.Sprintf("%s; quarantined %v ago, part of the shift", reason, now.Sub(s.since)))
				d.release(s, now)
				s.released, s.refused = time.Time{}, true // not a flap; retried after the shift
			}
		}
	}
	d.shift = true
	var keys []string
	for _, s := range candidates {
		if !s.refused {
			sig, _ := s.dwelt(now, d.set.Dwell)
			add(Refused, s, sig, reason)
			s.refused = true
		}
		if len(keys) < 10 {
			keys = append(keys, s.key)
		}
	}
	if d.lastValveLog.IsZero() || now.Sub(d.lastValveLog) >= time.Minute {
		d.lastValveLog = now
		d.log.Error("quarantine refused by the safety valve: a shift this wide is more likely bidguard's or the exchange's than the seats'; check recent config, floor and currency changes",
			"candidates", len(candidates), "quarantinedOrOver", pressure, "activeSeats", active, "maxShare", d.set.MaxShare,
			"valveWindow", d.set.ValveWindow, "seats", keys)
	}
}

// thresholds are a seat's thresholds: its override, else the global ones.
func (d *Detector) thresholds(key string) Thresholds {
	if t, ok := d.set.Overrides[key]; ok {
		return t
	}
	return d.set.Thresholds
}

// evict keeps room in the seat table for the seats that arrive between two
// ticks. When less than a sixteenth of maxSeats is free, idle seats (no bid
// for two windows) are forgotten, least recently seen first, until a
// sixteenth is free again; when new seats were turned away (the table is
// full of seats that are not idle) the least recently seen sixteenth goes
// all the same, and a table over a lowered maxSeats is cut down to it.
// Never a quarantined seat. An evicted seat that bids again starts over as
// a new seat.
func (d *Detector) evict(now time.Time) {
	turned := d.tab.full.Swap(0)
	limit := int(d.tab.max.Load())
	room := max(1, limit/16)
	size := len(d.seats)
	forced := 0
	if turned > 0 && size >= limit {
		forced = room
	}
	forced = max(forced, size-limit)
	idleOver := size - (limit - room)
	if forced <= 0 && idleOver <= 0 {
		return
	}
	if turned > 0 && (d.lastFullLog.IsZero() || now.Sub(d.lastFullLog) >= time.Minute) {
		d.lastFullLog = now
		d.log.Warn("quarantine seat table full: the least recently seen seats are forgotten", "maxSeats", limit, "untrackedBids", turned)
	}
	victims := make([]*Seat, 0, len(d.seats))
	for _, s := range d.seats {
		if s.signal == None {
			victims = append(victims, s)
		}
	}
	seen := func(s *Seat) time.Time {
		if s.lastSeen.IsZero() {
			return s.born
		}
		return s.lastSeen
	}
	sort.SliceStable(victims, func(i, j int) bool { return seen(victims[i]).Before(seen(victims[j])) })
	idleBefore := now.Add(-2 * d.set.Window)
	drop := map[*Seat]bool{}
	for _, s := range victims {
		if len(drop) >= forced && (len(drop) >= idleOver || !seen(s).Before(idleBefore)) {
			break
		}
		drop[s] = true
	}
	if len(drop) > 0 {
		d.seats = d.tab.rebuild(drop, d.seats)
	}
}
