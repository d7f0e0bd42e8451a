package gates

// tmaxGuard (OpenRTB 2.6 §3.2.1, BidRequest.tmax): a response-level guard.
// It reads the time left before the deadline D (engine.Input.Deadline) and,
// when less than bufferMs remains, stops every later gate; onDeadline then
// drops the response (codes 2 / 101) or forwards the bids unvalidated.
// It is exempt from the engine's pre-gate deadline check.

import (
	"errors"
	"math"

	"github.com/bidguard/bidguard/engine"
)

// tmaxGuardOptions configures tmaxGuard.
type tmaxGuardOptions struct {
	// BufferMs is the least budget, in ms, the later gates need (default 5).
	BufferMs float64 `yaml:"bufferMs"`
}

func (o *tmaxGuardOptions) validate() error {
	if !(o.BufferMs >= 0) || math.IsInf(o.BufferMs, 0) {
		return errors.New("bufferMs must be >= 0 and finite")
	}
	return nil
}

type tmaxGuard struct {
	buffer float64
}

var tmaxGuardFactory = engine.Factory{
	Name: "tmaxGuard", ResultName: "rtb.tmax-guard", Kind: engine.Guard,
	Options: func() any { return &tmaxGuardOptions{BufferMs: 5} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*tmaxGuardOptions)
		if err := o.validate(); err != nil {
			return nil, err
		}
		return &tmaxGuard{buffer: o.BufferMs}, nil
	},
}

func (g *tmaxGuard) Kind() engine.Kind { return engine.Guard }

// CheckDeadline expires when deadline - now < bufferMs.
func (g *tmaxGuard) CheckDeadline(in *engine.Input) engine.Verdict {
	remaining := float64(in.Deadline.Sub(in.Now())) / 1e6
	if remaining >= g.buffer {
		return engine.Pass()
	}
	return engine.Expire("tmax budget exhausted (" + formatMs(remaining) + "ms left, buffer " + formatMs(g.buffer) + "ms)")
}

// BufferMs is the budget the guard keeps for later gates.
func (g *tmaxGuard) BufferMs() float64 { return g.buffer }

var (
	_ engine.DeadlineGate   = (*tmaxGuard)(nil)
	_ engine.DeadlineBuffer = (*tmaxGuard)(nil)
)
