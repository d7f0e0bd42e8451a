package engine

// Outcome is the engine's verdict on one pair, read after Eval.Run. It
// belongs to an Eval and must not be retained after the Eval is released.
//
// The verdicts are Bids (one per decoded bid, Bids[i] for Input.Bids[i])
// and Response (the response as a whole); Action and Kept follow from them.
// Every reader of an outcome (metrics, the rejection log, the answer, the
// audit log, the quarantine detector) reads those; nothing rebuilds a
// verdict from the hit lists. The hit lists Rejected and Warned are the
// record of each hit for check's JSON, the audit log, the rejection log and
// seatNonBid: bid-level hits in response order, response-level hits last.
//
// Reading an Outcome allocates nothing.
type Outcome struct {
	Gates []GateResult
	// Bids holds one verdict per decoded bid: Bids[i] is the verdict on
	// Input.Bids[i]. It is empty for a response over limits.maxBids (whose
	// bids are not decoded: Response carries the limit's rejection).
	Bids []BidVerdict
	// Response is the verdict on the response as a whole.
	Response Judgement

	Rejected []Hit
	Warned   []Hit
	Skips    []BidSkip
	Action   Action
	// DeadlineHit is true when tmaxGuard or a gate ran out of time;
	// DeadlineForwarded when onDeadline: forward let the bids out.
	DeadlineHit, DeadlineForwarded bool
	// Kept counts bids forwarded to the exchange.
	Kept int
	// Timed: the run measured its gates' latencies (RunOptions.TimeGates).
	Timed bool
}

// Passed is true exactly when nothing was rejected (would-be rejections
// under action: shadow and warn-mode hits do not count).
func (o *Outcome) Passed() bool { return !o.Response.Rejected() && o.Kept == len(o.Bids) }

// reset empties o, keeping its slices' capacity. o is zeroed in place and
// the slices put back (see Input.reset).
func (o *Outcome) reset() {
	clear(o.Bids)
	gates, bids, rejected, warned, skips := o.Gates[:0], o.Bids[:0], o.Rejected[:0], o.Warned[:0], o.Skips[:0]
	*o = Outcome{}
	o.Gates, o.Bids, o.Rejected, o.Warned, o.Skips = gates, bids, rejected, warned, skips
}

// NumHits is the number of listed hits, Rejected and Warned together.
func (o *Outcome) NumHits() int { return len(o.Rejected) + len(o.Warned) }

// Hit returns listed hit i, 0 <= i < NumHits: the Rejected hits first, then
// the Warned ones; rejected tells which list it is from (a Warned hit is a
// warn-mode hit or a would-be rejection under action: shadow).
func (o *Outcome) Hit(i int) (h *Hit, rejected bool) {
	if i < len(o.Rejected) {
		return &o.Rejected[i], true
	}
	return &o.Warned[i-len(o.Rejected)], false
}

// Judgement is what the gates made of one bid or of the response.
type Judgement struct {
	// Rejection is the first rejection: by a gate in mode enforce, or by an
	// engine rule (limits.maxBids, the deadline). Its Name is "" when
	// nothing rejected.
	Rejection Rejection
	// Shadow is true when Rejection is a would-be rejection: the policy's
	// action is shadow, so nothing was removed.
	Shadow bool
	// Warnings counts the hits of gates in mode: warn.
	Warnings int
}

// Failed reports whether it was rejected or would have been (action:
// shadow).
func (j *Judgement) Failed() bool { return j.Rejection.Name != "" }

// Rejected reports whether a rejection removed the bid (or the response).
func (j *Judgement) Rejected() bool { return j.Failed() && !j.Shadow }

// WouldReject reports whether a rejection was only recorded (action: shadow).
func (j *Judgement) WouldReject() bool { return j.Failed() && j.Shadow }

// Warned reports whether it has a hit in the Warned list: a warn-mode hit
// or a would-be rejection.
func (j *Judgement) Warned() bool { return j.Warnings > 0 || j.WouldReject() }

// Status is the verdict in one word.
func (j *Judgement) Status() Status {
	switch {
	case j.Rejected():
		return StatusRejected
	case j.Warned():
		return StatusWarned
	}
	return StatusPassed
}

// Status is a verdict in one word, as bidguard_bids_total{verdict} counts
// it.
type Status uint8

const (
	// StatusPassed: no hit.
	StatusPassed Status = iota
	// StatusWarned: warn-mode hits or a would-be rejection, nothing removed.
	StatusWarned
	// StatusRejected: removed by a rejection.
	StatusRejected
)

func (s Status) String() string {
	switch s {
	case StatusWarned:
		return "warned"
	case StatusRejected:
		return "rejected"
	}
	return "passed"
}

// Rejection is one rejection: which gate, why, and its codes.
type Rejection struct {
	// Gate is the gate that rejected (for a deadline, the gate that ran out
	// of time or tmaxGuard); nil for limits.maxBids, which no gate judges.
	// Readers recognise a gate by this identity, not by a name.
	Gate *GateEntry
	// Name is the gate's result name as hits and metrics carry it
	// (GateBidsLimit for limits.maxBids); "" when there is no rejection.
	Name   string
	Reason string
	// Loss is the OpenRTB loss reason code, NBR the seat-non-bid code.
	Loss, NBR int
}

// BidVerdict is the verdict on one bid.
type BidVerdict struct {
	Judgement
	// Policy is the policy that judged the bid.
	Policy *Policy
	// Kept is true when the bid goes to the exchange: neither its own
	// rejection nor the response's removed it.
	Kept bool
}

// QuarantineGate is implemented by the gate that rejects the bids of
// quarantined seats. Its entries know it (GateEntry.EnforcesQuarantine), so
// that its rejections, the quarantine's effect rather than evidence of a
// seat's behaviour, are told apart by identity, not by name.
type QuarantineGate interface {
	BidGate
	EnforcesQuarantine()
}

// EnforcesQuarantine reports whether the gate is the QuarantineGate.
func (g *GateEntry) EnforcesQuarantine() bool { return g.quarantine }
