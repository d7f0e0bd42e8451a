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

// pending is what the bid path adds up between two ticks.
type pending struct {
	bids, rejected, novel atomic.Uint32
	price                 [numBins]atomic.Uint32
}

// bucket is one sub-bucket of the window, or the sum of the window.
type bucket struct {
	bids, rejected, novel, priced uint32
	price                         [numBins]uint32
}

func (b *bucket) add(o *bucket) {
	b.bids += o.bids
	b.rejected += o.rejected
	b.novel += o.novel
	b.priced += o.priced
	for i := range b.price {
		b.price[i] += o.price[i]
	}
}

func (b *bucket) sub(o *bucket) {
	b.bids -= o.bids
	b.rejected -= o.rejected
	b.novel -= o.novel
	b.priced -= o.priced
	for i := range b.price {
		b.price[i] -= o.price[i]
	}
}

// baseline is a seat's decaying baseline: sub-buckets leaving the window
// are folded in with weight 1 while what it held decays by
// e^(-sub/baselineWindow). Only sub-buckets that hold bids are folded, so a
// seat that goes quiet keeps the baseline of what it did before.
type baseline struct {
	price  [numBins]float32
	priced float64 // decayed priced bids
	bids   float64 // decayed bids
	rate   float64 // EWMA of bids per second, bias-corrected by rateW
	rateW  float64
	folds  int
}

func (b *baseline) fold(x *bucket, alpha float64, sub time.Duration) {
	a := float32(alpha)
	for i := range b.price {
		b.price[i] = b.price[i]*a + float32(x.price[i])
	}
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

// Seat is one tracked seat. The bid path calls Observe; everything else
// belongs to the detector's goroutine.
type Seat struct {
	d     *Detector
	pend  pending
	state atomic.Uint32 // the Signal the gate reports; None when not quarantined
	cur   [2]sketch     // values of the last one or two windows; the bid path adds to cur[Detector.gen]
	seen  [2]sketch     // the baseline's values: two generations of one baseline window each

	// Owned by the detector's goroutine (Detector.mu).
	key       string
	born      time.Time
	lastSeen  time.Time
	ring      [ringSize]bucket
	win       bucket // the sum of ring
	base      baseline
	seenNew   int  // the seen generation values are merged into
	rotations int  // window boundaries since the seat's first bid, or since it was forgotten
	folded    int  // sub-buckets folded since the seen generations last rotated
	paused    bool // the baseline learns nothing: the seat is quarantined or over a threshold
	signal    Signal
	since     time.Time // quarantined at
	calmSince time.Time // every signal under its threshold since (zero: not calm)
	refused   bool      // held back by the safety valve since its signals went over
	overSince [numMeasured]time.Time
	value     [numMeasured]float64
	judged    [numMeasured]bool
}

// Observe records one bid of the seat. It never blocks and allocates
// nothing: a few atomic adds, and two or more string hashes probing the
// seat's sketches. Safe for concurrent use.
func (s *Seat) Observe(b *Bid) {
	p := &s.pend
	p.bids.Add(1)
	if b.Rejected {
		p.rejected.Add(1)
	}
	if b.HasPrice {
		p.price[priceBin(b.Price)].Add(1)
	}
	seed := s.d.seed
	cur := &s.cur[s.d.gen.Load()&1]
	novel := false
	if b.CRID != "" {
		h := maphash.String(seed, b.CRID)
		novel = !s.seenHas(h)
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
		if !s.seenHas(h) {
			novel = true
		}
		cur.add(h)
	}
	if novel {
		p.novel.Add(1)
	}
}

func (s *Seat) seenHas(h uint64) bool { return s.seen[0].has(h) || s.seen[1].has(h) }

// drain moves the bid path's pending counts into b and the window sum, and
// reports whether there were any.
func (s *Seat) drain(b *bucket) bool {
	p := &s.pend
	if p.bids.Load() == 0 {
		return false
	}
	var x bucket
	x.bids = p.bids.Swap(0)
	x.rejected = p.rejected.Swap(0)
	x.novel = p.novel.Swap(0)
	for i := range p.price {
		if p.price[i].Load() != 0 {
			v := p.price[i].Swap(0)
			x.price[i] = v
			x.priced += v
		}
	}
	b.add(&x)
	s.win.add(&x)
	return true
}

// advance slides the window from sub-bucket epoch from to epoch to: each
// sub-bucket leaving it is folded into the baseline (unless paused) and
// emptied for reuse.
func (s *Seat) advance(from, to int64, alpha float64, sub time.Duration) {
	n := to - from
	if n > ringSize {
		n = ringSize
	}
	for j := int64(1); j <= n; j++ {
		b := &s.ring[(from+j)%ringSize]
		if b.bids == 0 {
			continue
		}
		if !s.paused {
			s.base.fold(b, alpha, sub)
			s.folded++
		}
		s.win.sub(b)
		*b = bucket{}
	}
}

// forget drops what the seat learned (baseline and sketches), keeping the
// window: after an operator release, what the seat sends is its new normal.
func (s *Seat) forget() {
	s.base = baseline{}
	for i := range s.seen {
		s.seen[i].clear()
		s.cur[i].clear()
	}
	s.overSince = [numMeasured]time.Time{}
	s.calmSince, s.refused, s.paused, s.rotations, s.folded = time.Time{}, false, false, 0, 0
}

// resetWindow empties the window (the window length changed).
func (s *Seat) resetWindow() {
	s.ring = [ringSize]bucket{}
	s.win = bucket{}
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
	s.value = [numMeasured]float64{}
	s.judged = [numMeasured]bool{}

	s.value[Rejections-1] = float64(w.rejected) / bids
	s.judged[Rejections-1] = enough

	s.value[Novelty-1] = float64(w.novel) / bids
	s.judged[Novelty-1] = enough && warm && s.rotations >= noveltyRotations

	if w.priced > 0 && s.base.priced > 0 {
		floor := binLower(1)
		r50 := quantile(&w.price, 0.5) / math.Max(quantile(&s.base.price, 0.5), floor)
		r95 := quantile(&w.price, 0.95) / math.Max(quantile(&s.base.price, 0.95), floor)
		s.value[Price-1] = math.Max(r50, r95)
	}
	s.judged[Price-1] = warm && w.priced >= min && s.base.priced >= float64(min)

	if covered > 0 {
		floor := float64(set.MinSamples) / set.Window.Seconds()
		s.value[Velocity-1] = float64(w.bids) / covered.Seconds() / math.Max(s.base.perSecond(), floor)
	}
	s.judged[Velocity-1] = enough && warm
}

// over reports whether signal i (Signal i+1) is judged and over th.
func (s *Seat) over(i int, th *Thresholds) bool {
	return s.judged[i] && s.value[i] > th.of(Signal(i+1))
}
