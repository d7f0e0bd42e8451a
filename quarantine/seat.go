package quarantine

import (
	"hash/maphash"
	"math"
	"sync/atomic"
	"time"
)

// ringSize is the number of sub-buckets of a window: the window slides by
// window/ringSize.
const ringSize = 6

// maxDomains is the number of adomain entries of a bid the novelty signal
// reads.
const maxDomains = 4

// domainSalt separates adomain hashes from crid hashes in one sketch.
const domainSalt = 0x9e3779b97f4a7c15

// Bid is what the detector reads of one judged bid. Observe keeps neither
// it nor any string it holds: crid and adomain are hashed.
type Bid struct {
	Price    float64
	HasPrice bool
	// Rejected is true when a gate other than the quarantine gate rejected
	// the bid, or would have under action: shadow.
	Rejected bool
	CRID     string
	ADomain  []string
}

// pending is what the bid path adds up between two ticks (the prices, once
// the seat has them, in detail.price).
type pending struct {
	bids, rejected, novel atomic.Uint32
}

// counts are the counts of one sub-bucket of the window, or of the window.
// Priced and novel count only bids observed while the seat had its detail.
type counts struct {
	bids, rejected, novel, priced uint32
}

func (c *counts) add(o *counts) {
	c.bids += o.bids
	c.rejected += o.rejected
	c.novel += o.novel
	c.priced += o.priced
}

func (c *counts) sub(o *counts) {
	c.bids -= o.bids
	c.rejected -= o.rejected
	c.novel -= o.novel
	c.priced -= o.priced
}

// baseline is a seat's decaying baseline: sub-buckets leaving the window
// are folded in with weight 1 while what it held decays by
// e^(-sub/baselineWindow). Only sub-buckets that hold bids are folded, so a
// seat that goes quiet keeps the baseline of what it did before. Its price
// histogram is detail.base.
type baseline struct {
	priced float64 // decayed priced bids
	bids   float64 // decayed bids
	rate   float64 // EWMA of bids per second, bias-corrected by rateW
	rateW  float64
	folds  int
}

func (b *baseline) fold(x *counts, alpha float64, sub time.Duration) {
	b.priced = b.priced*alpha + float64(x.priced)
	b.bids = b.bids*alpha + float64(x.bids)
	b.rate = b.rate*alpha + (1-alpha)*float64(x.bids)/sub.Seconds()
	b.rateW = b.rateW*alpha + (1 - alpha)
	b.folds++
}

// perSecond is the baseline bid rate.
func (b *baseline) perSecond() float64 {
	if b.rateW <= 0 {
		return 0
	}
	return b.rate / b.rateW
}

// detail is the part of a seat that the price and novelty signals need:
// 4 KiB, allocated by the detector at the first tick after the seat has
// sent MinSamples bids (a seat that never sends that many could never be
// judged on them). The bid path adds to price and cur; the rest belongs to
// the detector's goroutine.
type detail struct {
	price [numBins]atomic.Uint32    // pending prices
	cur   [2]sketch                 // values of the last one or two windows; the bid path adds to cur[Detector.gen]
	seen  [2]sketch                 // the baseline's values: two generations of one baseline window each
	ring  [ringSize][numBins]uint32 // the prices of each sub-bucket of the window
	base  [numBins]float32          // the baseline's decayed prices
}

// Seat is one tracked seat. The bid path calls Observe; everything else
// belongs to the detector's goroutine.
type Seat struct {
	d     *Detector
	pend  pending
	state atomic.Uint32          // the Signal the gate reports; None when not quarantined
	det   atomic.Pointer[detail] // nil until the seat has sent MinSamples bids

	// Owned by the detector's goroutine (Detector.mu).
	key       string
	sent      uint32 // bids drained before the detail was allocated
	born      time.Time
	lastSeen  time.Time
	ring      [ringSize]counts
	win       counts // the sum of ring
	base      baseline
	seenNew   int  // the seen generation values are merged into
	rotations int  // window boundaries the sketch learned at since the detail was allocated, or since the seat was forgotten
	folded    int  // sub-buckets folded since the seen generations last rotated
	paused    bool // the baseline learns nothing: the seat is quarantined or over a threshold
	signal    Signal
	since     time.Time     // quarantined at
	hold      time.Duration // the current (or last) quarantine's hold: ttl doubled per flap, up to maxTTL
	strikes   int           // how many times hold was doubled
	released  time.Time     // the last release by the detector (zero after an operator release)
	calmSince time.Time     // every signal under its threshold since (zero: not calm)
	refused   bool          // held back by the safety valve during the current shift
	pressed   time.Time     // the last tick the seat was quarantined or over a threshold: the valve's numerator
	active    time.Time     // the last tick the seat had minSamples bids in its window: the valve's denominator
	overSince [numMeasured]time.Time
	value     [numMeasured]float64
	low       float64 // the price signal's lower side: window median or p5 over the baseline's, the smaller
	judged    [numMeasured]bool
}

// Observe records one bid of the seat. It never blocks and allocates
// nothing: a few atomic adds and, once the seat has its detail, two or
// more string hashes probing the seat's sketches. Safe for concurrent use.
func (s *Seat) Observe(b *Bid) {
	p := &s.pend
	p.bids.Add(1)
	if b.Rejected {
		p.rejected.Add(1)
	}
	dt := s.det.Load()
	if dt == nil {
		return
	}
	if b.HasPrice {
		dt.price[priceBin(b.Price)].Add(1)
	}
	seed := s.d.seed
	cur := &dt.cur[s.d.gen.Load()&1]
	novel := false
	if b.CRID != "" {
		h := maphash.String(seed, b.CRID)
		novel = !dt.seenHas(h)
		cur.add(h)
	}
	for i, a := range b.ADomain {
		if i == maxDomains {
			break
		}
		if a == "" {
			continue
		}
		h := maphash.String(seed, a) ^ domainSalt
		if !dt.seenHas(h) {
			novel = true
		}
		cur.add(h)
	}
	if novel {
		p.novel.Add(1)
	}
}

func (dt *detail) seenHas(h uint64) bool { return dt.seen[0].has(h) || dt.seen[1].has(h) }

// drain moves the bid path's pending counts into sub-bucket i and the
// window sum, and reports whether there were any.
func (s *Seat) drain(i int) bool {
	p := &s.pend
	if p.bids.Load() == 0 {
		return false
	}
	x := counts{bids: p.bids.Swap(0), rejected: p.rejected.Swap(0), novel: p.novel.Swap(0)}
	if dt := s.det.Load(); dt != nil {
		for j := range dt.price {
			if dt.price[j].Load() != 0 {
				v := dt.price[j].Swap(0)
				dt.ring[i][j] += v
				x.priced += v
			}
		}
	} else {
		s.sent += x.bids
	}
	s.ring[i].add(&x)
	s.win.add(&x)
	return true
}

// grow allocates the seat's detail once it has sent minSamples bids.
// Novelty counts its window boundaries from then on.
func (s *Seat) grow(minSamples int) {
	if s.det.Load() == nil && s.sent >= uint32(minSamples) {
		s.det.Store(new(detail))
		s.rotations, s.folded = 0, 0
	}
}

// advance slides the window from sub-bucket epoch from to epoch to: each
// sub-bucket leaving it is folded into the baseline (unless paused) and
// emptied for reuse.
func (s *Seat) advance(from, to int64, alpha float64, sub time.Duration) {
	n := to - from
	if n > ringSize {
		n = ringSize
	}
	dt := s.det.Load()
	a := float32(alpha)
	for j := int64(1); j <= n; j++ {
		k := (from + j) % ringSize
		b := &s.ring[k]
		if b.bids == 0 {
			continue
		}
		if !s.paused {
			s.base.fold(b, alpha, sub)
			if dt != nil {
				for i, c := range dt.ring[k] {
					dt.base[i] = dt.base[i]*a + float32(c)
				}
			}
			s.folded++
		}
		s.win.sub(b)
		*b = counts{}
		if dt != nil {
			dt.ring[k] = [numBins]uint32{}
		}
	}
}

// forget drops what the seat learned (baseline, sketches and flapping
// history), keeping the window: after an operator release, what the seat
// sends is its new normal.
func (s *Seat) forget() {
	s.base = baseline{}
	if dt := s.det.Load(); dt != nil {
		for i := range dt.seen {
			dt.seen[i].clear()
			dt.cur[i].clear()
		}
		dt.base = [numBins]float32{}
	}
	s.overSince = [numMeasured]time.Time{}
	s.calmSince, s.refused, s.paused, s.rotations, s.folded = time.Time{}, false, false, 0, 0
	s.strikes, s.hold, s.released = 0, 0, time.Time{}
}

// resetWindow empties the window (the window length changed).
func (s *Seat) resetWindow() {
	s.ring = [ringSize]counts{}
	s.win = counts{}
	if dt := s.det.Load(); dt != nil {
		dt.ring = [ringSize][numBins]uint32{}
	}
}

// warm reports whether the baseline holds a whole window of sub-buckets and
// minSamples bids: price and velocity are judged from then on.
func (s *Seat) warm(minSamples int) bool {
	return s.base.folds >= ringSize && s.base.bids >= float64(minSamples)
}

// noveltyRotations is the number of window boundaries a seat must have seen
// before its novelty is judged: values seen in a window reach the baseline's
// sketch at the second boundary after it, so the third brings a whole window
// of the seat's values, and the fourth a window of bids all probed against
// it.
const noveltyRotations = 4

// measure computes the signals' values and whether each can be judged.
// covered is how long the window spans now.
func (s *Seat) measure(set *Settings, covered time.Duration) {
	w := &s.win
	min := uint32(set.MinSamples)
	enough := w.bids >= min
	warm := s.warm(set.MinSamples)
	bids := math.Max(float64(w.bids), 1)
	dt := s.det.Load()
	s.value = [numMeasured]float64{}
	s.judged = [numMeasured]bool{}
	s.low = 1

	s.value[Rejections-1] = float64(w.rejected) / bids
	s.judged[Rejections-1] = enough

	s.value[Novelty-1] = float64(w.novel) / bids
	s.judged[Novelty-1] = enough && warm && dt != nil && s.rotations >= noveltyRotations

	if dt != nil && w.priced > 0 && s.base.priced > 0 {
		var wp [numBins]uint32
		for k := range dt.ring {
			for i, c := range dt.ring[k] {
				wp[i] += c
			}
		}
		// Both sides are floored at the lowest priced bin: prices under
		// it (zero included) read as equal, never as a move.
		floor := binLower(1)
		ratio := func(q float64) float64 {
			return math.Max(quantile(&wp, q), floor) / math.Max(quantile(&dt.base, q), floor)
		}
		r50 := ratio(0.5)
		s.value[Price-1] = math.Max(r50, ratio(0.95))
		s.low = math.Min(r50, ratio(0.05))
	}
	s.judged[Price-1] = warm && w.priced >= min && s.base.priced >= float64(min)

	if covered > 0 {
		floor := float64(set.MinSamples) / set.Window.Seconds()
		s.value[Velocity-1] = float64(w.bids) / covered.Seconds() / math.Max(s.base.perSecond(), floor)
	}
	s.judged[Velocity-1] = enough && warm
}

// over reports whether signal i (Signal i+1) is judged and over th (for
// price, over th.Price or under the settings' PriceDrop). Detector.mu held.
func (s *Seat) over(i int, th *Thresholds) bool {
	if !s.judged[i] {
		return false
	}
	if Signal(i+1) == Price && s.low < s.d.set.PriceDrop {
		return true
	}
	return s.value[i] > th.of(Signal(i+1))
}

// reading is signal sig's value and threshold as reasons show them: for a
// price under PriceDrop, the lower side ("0.5 under 0.55").
func (s *Seat) reading(sig Signal, th *Thresholds) (v, limit float64, under bool) {
	i := int(sig) - 1
	if sig == Price && s.value[i] <= th.Price && s.low < s.d.set.PriceDrop {
		return s.low, s.d.set.PriceDrop, true
	}
	return s.value[i], th.of(sig), false
}
