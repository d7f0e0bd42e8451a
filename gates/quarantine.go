package gates

// quarantine (the anomaly detector's verdicts): the bids of a
// quarantined seat are rejected. Which seats are quarantined, and for what
// signal, is the snapshot's engine.SeatStates, read through the Input: in
// serve the anomaly detector, which also holds the seats of
// quarantine.seats (bare entries on every upstream, "<upstream>/<seat>" on
// that upstream); in check only the bare entries of quarantine.seats, as
// check has no upstream. While no seat is quarantined the gate skips the
// request. The default policy runs it last, so a bid that breaks a rule is
// rejected for that rule and the detector keeps seeing the seat's true
// rejection rate during a quarantine. Under action: shadow its rejections
// are would-be rejections, as any gate's.

import (
	"github.com/bidguard/bidguard/engine"
)

// The codes of every quarantine rejection.
const (
	quarantineLoss = engine.LossBuyerSeatBlocked
	quarantineNBR  = engine.NBRResponseRejectedGeneral
)

// reasonNoQuarantine is the skip of a request while no seat is quarantined.
const reasonNoQuarantine = "no seat quarantined"

type quarantine struct{}

var quarantineFactory = engine.Factory{
	Name: "quarantine", ResultName: "rtb.quarantine", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return quarantine{}, nil },
}

func (quarantine) Kind() engine.Kind { return engine.PerBid }

// Prepare skips the request while no seat is quarantined.
func (quarantine) Prepare(in *engine.Input) string {
	if in.Quarantine == nil || !in.Quarantine.Any() {
		return reasonNoQuarantine
	}
	return ""
}

// CheckBid rejects a bid of a quarantined seat: seat quarantined: <signal>.
func (quarantine) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	sig := in.Quarantine.Quarantined(in.Upstream, b.Seat)
	if sig == "" {
		return engine.Pass()
	}
	return engine.Reject(quarantineReason(sig), quarantineLoss, quarantineNBR)
}

// EnforcesQuarantine marks the gate for the engine: its rejections are the
// quarantine's effect, not fed back to the detector.
func (quarantine) EnforcesQuarantine() {}

// quarantineReason is the reason for a signal, without building a string
// for the signals the detector and the operator use.
func quarantineReason(signal string) string {
	switch signal {
	case "rejections":
		return "seat quarantined: rejections"
	case "price":
		return "seat quarantined: price"
	case "novelty":
		return "seat quarantined: novelty"
	case "velocity":
		return "seat quarantined: velocity"
	case engine.SignalOperator:
		return "seat quarantined: operator"
	}
	return "seat quarantined: " + signal
}

var _ engine.QuarantineGate = quarantine{}
