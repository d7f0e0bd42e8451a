package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"time"

	"github.com/bidguard/bidguard/config"
)

// DeadlineFor computes T (ms) and the deadline D for a request that arrived
// at arrival with the given tmax (docs/design.md "Deadlines").
func DeadlineFor(d config.Deadline, tmax int64, arrival time.Time) (tMs int64, deadline time.Time) {
	tMs = tmax
	if tMs <= 0 {
		tMs = int64(d.DefaultTmaxMs)
	}
	if tMs > int64(d.MaxTmaxMs) {
		tMs = int64(d.MaxTmaxMs)
	}
	return tMs, arrival.Add(time.Duration(tMs-int64(d.ReturnMarginMs)) * time.Millisecond)
}

// CheckOptions are the knobs of `bidguard check`.
type CheckOptions struct {
	// ElapsedMs freezes the evaluation clock at arrival + ElapsedMs.
	ElapsedMs int64
	// LatencyMs is what `latency` sees; negative means unknown.
	LatencyMs int64
	// All runs as if failFast were false and lists every hit.
	All bool
}

// Report is the JSON object `bidguard check` prints.
type Report struct {
	Passed   bool            `json:"passed"`
	Action   string          `json:"action"`
	Gates    []GateResult    `json:"gates"`
	Rejected []Hit           `json:"rejected"`
	Warned   []Hit           `json:"warned"`
	Response json.RawMessage `json:"response"`
}

// InputError says which input could not be evaluated.
type InputError struct {
	// Which is "request" or "response".
	Which string
	Err   error
}

func (e *InputError) Error() string { return e.Which + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Check evaluates one pair offline exactly as serve would judge it, with a
// frozen clock. It is the engine's contract (docs/design.md "check"). The
// returned Eval holds the outcome; the caller releases it.
func Check(snap *Snapshot, request, response []byte, opt CheckOptions) (*Report, *Eval, error) {
	e := AcquireEval()
	if err := e.DecodeRequest(request); err != nil {
		ReleaseEval(e)
		return nil, nil, &InputError{Which: "request", Err: err}
	}
	if err := e.DecodeResponse(response, snap.Config.Limits.MaxBids); err != nil {
		ReleaseEval(e)
		return nil, nil, &InputError{Which: "response", Err: err}
	}
	arrival := time.Unix(1_700_000_000, 0)
	_, d := DeadlineFor(snap.Config.Deadline, e.In.Request.TMax, arrival)
	e.SetDeadline(arrival, d)
	e.In.FreezeClock(arrival.Add(time.Duration(opt.ElapsedMs) * time.Millisecond))
	if opt.LatencyMs >= 0 {
		e.SetLatency(float64(opt.LatencyMs))
	}
	out := e.Run(snap, RunOptions{All: opt.All, TimeGates: true})
	r := &Report{
		Passed:   out.Passed(),
		Action:   out.Action.String(),
		Gates:    append([]GateResult{}, out.Gates...),
		Rejected: append([]Hit{}, out.Rejected...),
		Warned:   append([]Hit{}, out.Warned...),
		Response: json.RawMessage("null"),
	}
	if body := e.Body(); body != nil {
		r.Response = bytes.Clone(body) // the Report outlives the Eval's buffer
	}
	return r, e, nil
}

// msToDuration converts fractional milliseconds.
func msToDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}
