package rtb

import (
	"math"
	"sync/atomic"
	"time"
)

// The judging cost model's constants.
const (
	// judgeNsPerByte seeds the per-byte cost: decoding a bidder's answer,
	// judging it with the default policy and encoding the exchange's answer,
	// measured on the 2-core development machine by
	//
	//	go test -run '^$' -bench JudgeCost ./rtb/
	//
	// (29–47 ns/byte from 3 to 999 bids; rounded up).
	judgeNsPerByte = 50
	// judgeFixed is reserved on top of the per-byte cost: writing the
	// answer and scheduling delays.
	judgeFixed = time.Millisecond
	// costSampleBytes is the smallest answer the model learns from: on
	// smaller ones fixed costs dominate, and they always fit anyway.
	costSampleBytes = 16 << 10
	// costMemory is how long a measurement stays valid: with none for that
	// long (every large answer dropped, say), the model returns to the seed.
	costMemory = time.Second
)

// judgeCost estimates how long the bid path needs from a bidder's answer in
// hand to the exchange's answer leaving: judgeFixed + bytes × the per-byte
// cost. The per-byte cost follows what the path measures on answers of at
// least costSampleBytes (an exponentially weighted mean, weight 1/8), so a
// loaded machine or a heavier policy reserves more and a faster one less.
// The zero value starts at the seed; it is safe for concurrent use
// (concurrent updates may lose one another's sample) and allocates nothing.
type judgeCost struct {
	perByte atomic.Uint64 // math.Float64bits of ns per byte
	at      atomic.Int64  // monotonic ns of the last sample
}

// nsPerByte is the per-byte cost at now, an instant of monotonic()'s (the
// caller's own clock reading: the model's memory is a second long).
func (j *judgeCost) nsPerByte(now time.Duration) float64 {
	at := j.at.Load()
	if at == 0 || time.Duration(int64(now)-at) > costMemory {
		return judgeNsPerByte
	}
	return math.Float64frombits(j.perByte.Load())
}

// fits reports whether an answer of n bytes, in hand at now, can be judged
// and sent by deadline.
func (j *judgeCost) fits(n int, now, deadline time.Time) bool {
	need := judgeFixed + time.Duration(float64(n)*j.nsPerByte(now.Sub(epoch)))
	return !now.Add(need).After(deadline)
}

// learns reports whether the model learns from an answer of n bytes: the
// caller reads the clock for observe only then.
func (j *judgeCost) learns(n int) bool { return n >= costSampleBytes }

// observe records that an answer of n bytes took took to judge and encode,
// ending at end (monotonic()).
func (j *judgeCost) observe(n int, took, end time.Duration) {
	if !j.learns(n) {
		return
	}
	sample := float64(took) / float64(n)
	cur := j.nsPerByte(end)
	j.perByte.Store(math.Float64bits(cur + (sample-cur)/8))
	j.at.Store(int64(end))
}
