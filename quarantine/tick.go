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
// measured and the state machine and the safety valve run. Events are
// emitted after the lock is released.
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
		if s.drain(&s.ring[d.epoch%ringSize]) {
			s.lastSeen = now
		}
		s.advance(d.epoch, epoch, alpha, sub)
		if rotateCur {
			if !s.lastSeen.IsZero() {
				s.rotations++
			}
			if !s.paused {
				s.seen[s.seenNew].merge(&s.cur[older])
			}
			s.cur[older].clear()
		}
		if s.folded >= seenEvery {
			// The seen generations age with the seat's activity, as its
			// baseline does: a seat that goes quiet keeps its values.
			s.folded = 0
			s.seenNew = 1 - s.seenNew
			s.seen[s.seenNew].clear()
		}
	}
	if rotateCur {
		d.gen.Store(older) // emptied above: the bid path adds to it from now on
	}
	d.epoch, d.winEpoch = epoch, winEpoch
	covered := time.Duration(ringSize-1)*sub + now.Sub(time.Unix(0, epoch*int64(sub)))

	var ev []Event
	add := func(kind EventKind, s *Seat, sig Signal, reason string) {
		ev = append(ev, Event{Kind: kind, Seat: s.key, Signal: sig, Reason: reason, At: now, Version: set.Version})
	}
	var candidates []*Seat
	active, pressure := 0, 0
	for _, s := range d.seats {
		th := d.thresholds(s.key)
		if c := now.Sub(s.born); c < covered {
			s.measure(set, c)
		} else {
			s.measure(set, covered)
		}
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
			active++
		}
		if !anyOver {
			s.refused = false
		}
		if s.signal != None {
			pressure++
			if anyOver || s.win.bids < uint32(set.MinSamples) {
				s.calmSince = time.Time{} // unknown is not calm
			} else if s.calmSince.IsZero() {
				s.calmSince = now
			}
			if !now.Before(s.since.Add(set.TTL)) && !s.calmSince.IsZero() && now.Sub(s.calmSince) >= set.Calm {
				add(Released, s, s.signal, fmt.Sprintf("every signal under its threshold for %v after ttl %v", set.Calm, set.TTL))
				d.release(s)
			}
			continue
		}
		if anyOver {
			pressure++
			if _, ok := s.dwelt(now, set.Dwell); ok {
				candidates = append(candidates, s)
			}
		}
	}
	limit := set.MaxShare * float64(active)
	if len(candidates) > 0 && float64(pressure) > limit {
		d.refuse(candidates, pressure, active, now, add)
	} else {
		for _, s := range candidates {
			sig, _ := s.dwelt(now, set.Dwell)
			th := d.thresholds(s.key)
			i := int(sig) - 1
			add(Quarantined, s, sig, fmt.Sprintf("%s over threshold %s for %v", formatFloat(s.value[i]), formatFloat(th.of(sig)), set.Dwell))
			s.signal, s.since, s.calmSince, s.refused = sig, now, time.Time{}, false
			s.state.Store(uint32(sig))
		}
	}
	for _, s := range d.seats {
		s.paused = s.signal != None
		if !s.paused && !s.refused {
			for i := range s.overSince {
				s.paused = s.paused || !s.overSince[i].IsZero()
			}
		}
	}
	d.evict(now)
	d.recount()
	return ev
}

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

// refuse is the safety valve: quarantining the candidates would bring the
// seats quarantined or over a threshold above maxShare of the active seats.
// A shift that wide is more likely ours or the exchange's than the seats':
// none is quarantined, each refusal is an event (metered) once per episode,
// and one loud line is logged at most once a minute.
func (d *Detector) refuse(candidates []*Seat, pressure, active int, now time.Time, add func(EventKind, *Seat, Signal, string)) {
	reason := fmt.Sprintf("safety valve: %d of %d active seats quarantined or over a threshold, over maxShare %v", pressure, active, d.set.MaxShare)
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
			"candidates", len(candidates), "quarantinedOrOver", pressure, "activeSeats", active, "maxShare", d.set.MaxShare, "seats", keys)
	}
}

// thresholds are a seat's thresholds: its override, else the global ones.
func (d *Detector) thresholds(key string) Thresholds {
	if t, ok := d.set.Overrides[key]; ok {
		return t
	}
	return d.set.Thresholds
}

// evict makes room when the table is full and new seats were turned away:
// the least recently seen sixteenth of the seats goes, never a quarantined
// seat. An evicted seat that bids again starts over as a new seat.
func (d *Detector) evict(now time.Time) {
	turned := d.tab.full.Swap(0)
	if turned == 0 || d.tab.size.Load() < d.tab.max {
		return
	}
	if d.lastFullLog.IsZero() || now.Sub(d.lastFullLog) >= time.Minute {
		d.lastFullLog = now
		d.log.Warn("quarantine seat table full: the least recently seen seats are forgotten", "maxSeats", d.tab.max, "untrackedBids", turned)
	}
	victims := make([]*Seat, 0, len(d.seats))
	for _, s := range d.seats {
		if s.signal == None {
			victims = append(victims, s)
		}
	}
	sort.SliceStable(victims, func(i, j int) bool { return victims[i].lastSeen.Before(victims[j].lastSeen) })
	n := max(1, int(d.tab.max)/16)
	drop := map[*Seat]bool{}
	for _, s := range victims[:min(n, len(victims))] {
		drop[s] = true
	}
	d.seats = d.tab.rebuild(drop, d.seats)
}
