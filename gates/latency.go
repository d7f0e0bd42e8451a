package gates

// latency: a response gate over the bidder's response time as the sidecar
// measured it (in `check`, --latency-ms). Greater than maxMs fails; equal
// passes. Codes 2 / 101.

import (
	"errors"
	"math"

	"github.com/bidguard/bidguard/engine"
)

// latencyOptions configures latency.
type latencyOptions struct {
	// MaxMs is the largest acceptable response time in ms (required, > 0; may be fractional).
	MaxMs float64 `yaml:"maxMs"`
}

func (o *latencyOptions) validate() error {
	if !(o.MaxMs > 0) || math.IsInf(o.MaxMs, 0) {
		return errors.New("maxMs is required and must be > 0 and finite")
	}
	return nil
}

type latency struct {
	maxMs float64
}

var latencyFactory = engine.Factory{
	Name: "latency", ResultName: "latency", Kind: engine.Response,
	Options: func() any { return &latencyOptions{} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*latencyOptions)
		if err := o.validate(); err != nil {
			return nil, err
		}
		return &latency{maxMs: o.MaxMs}, nil
	},
}

func (g *latency) Kind() engine.Kind { return engine.Response }

// CheckResponse fails when the measured latency exceeds maxMs.
func (g *latency) CheckResponse(in *engine.Input) engine.Verdict {
	if !in.LatencyKnown {
		return engine.Skip("no latency_ms provided")
	}
	if in.LatencyMs <= g.maxMs {
		return engine.Pass()
	}
	return engine.Reject("latency "+formatMs(in.LatencyMs)+"ms exceeds "+formatMs(g.maxMs)+"ms threshold", engine.LossImpressionOpportunityExpired, engine.NBRErrorTimeout)
}

var _ engine.ResponseGate = (*latency)(nil)
