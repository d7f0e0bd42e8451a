package engine

// Kind says how a gate judges the pair and how the engine attributes its hits.
type Kind uint8

const (
	// PerBid gates judge each bid of seatbid[].bid[] on its own (BidGate).
	PerBid Kind = iota
	// Response gates judge the response as a whole (ResponseGate). A failure
	// rejects the response. Response gates run only in the default policy.
	Response
	// Scan gates look at every value of the response (ScanGate): a hit inside
	// a bid rejects that bid, a hit elsewhere rejects the response.
	Scan
	// Guard is the tmaxGuard kind (DeadlineGate): a response-level guard
	// that handles the deadline itself and is exempt from the pre-gate check.
	Guard
)

func (k Kind) String() string {
	switch k {
	case PerBid:
		return "per-bid"
	case Response:
		return "response"
	case Scan:
		return "scanning"
	case Guard:
		return "guard"
	}
	return "unknown"
}

// Gate is one pass/fail check. A Gate is built once per config load and is
// shared by every request: implementations must be safe for concurrent use
// and keep no per-request state.
type Gate interface {
	Kind() Kind
}

// BidGate judges one bid at a time.
type BidGate interface {
	Gate
	// Prepare runs once per request before any bid is judged. A non-empty
	// return skips the gate for this request with that reason
	// ("no bcat in request"). It must not allocate on the pass path.
	Prepare(in *Input) (skip string)
	// CheckBid judges one bid. It returns Pass(), Reject(...) or SkipBid(...).
	CheckBid(in *Input, b *Bid) Verdict
}

// ResponseGate judges the response as a whole. The engine never calls it on
// a response without bids unless the gate implements EmptyJudge.
type ResponseGate interface {
	Gate
	CheckResponse(in *Input) Verdict
}

// ScanGate walks the response and reports each hit through the Scope.
type ScanGate interface {
	Gate
	Scan(in *Input, sc *Scope)
}

// DeadlineGate is tmaxGuard: it reads the remaining budget and returns
// Pass() or Expire(reason).
type DeadlineGate interface {
	Gate
	CheckDeadline(in *Input) Verdict
}

// DeadlineBuffer is implemented by the Guard gate: the budget, in ms, it
// keeps for the gates after it. Compile checks that deadline.gateReserveMs
// is at least the largest buffer + 1, so a bidder that answers within its
// budget never trips the guard.
type DeadlineBuffer interface {
	BufferMs() float64
}

// EmptyJudge is implemented by gates that also judge a response without bids
// (content's "output is empty"). JudgesEmpty reports whether this instance does.
type EmptyJudge interface {
	JudgesEmpty() bool
}

// Verdict is a gate's answer for one bid or for the response. The zero value
// is a pass. Reason strings that carry numbers are built only on failure.
type Verdict struct {
	Reason  string
	Loss    int
	NBR     int
	Details any
	state   verdictState
}

type verdictState uint8

const (
	statePass verdictState = iota
	stateFail
	stateSkip
	stateExpire
)

// Pass is the passing verdict.
func Pass() Verdict { return Verdict{} }

// Reject fails the bid (or response) with a reason and its loss/nbr codes.
func Reject(reason string, loss, nbr int) Verdict {
	return Verdict{Reason: reason, Loss: loss, NBR: nbr, state: stateFail}
}

// Skip says the gate did not judge the response (response and scan gates).
func Skip(reason string) Verdict { return Verdict{Reason: reason, state: stateSkip} }

// SkipBid says a per-bid gate did not judge this bid; why is the short label
// counted in bidguard_bids_skipped_total{why} ("taxonomy").
func SkipBid(reason, why string) Verdict {
	return Verdict{Reason: reason, Details: why, state: stateSkip}
}

// Expire is tmaxGuard's verdict when the budget is exhausted.
func Expire(reason string) Verdict { return Verdict{Reason: reason, state: stateExpire} }

// WithDetails attaches details to a failing verdict.
func (v Verdict) WithDetails(d any) Verdict { v.Details = d; return v }

// Failed reports whether the verdict rejects.
func (v Verdict) Failed() bool { return v.state == stateFail }

// Skipped reports whether the verdict is a skip.
func (v Verdict) Skipped() bool { return v.state == stateSkip }

// Expired reports whether the verdict is a deadline expiry.
func (v Verdict) Expired() bool { return v.state == stateExpire }

// Env is what a gate constructor may use besides its options.
type Env struct {
	// Dir is the directory of the config file; relative paths in options
	// resolve against it.
	Dir string
	// InSeat is true when the gate is built for a seat policy.
	InSeat bool
	// Watch registers a file the gate read, so reload polls it.
	Watch func(path string)
}

// Factory describes a built-in gate: its names, its kind and how to build it.
type Factory struct {
	// Name is the factory name used in config ("bidSanity").
	Name string
	// ResultName is the default result name ("rtb.bid-sanity").
	ResultName string
	// Kind is the gate's kind.
	Kind Kind
	// Options returns a pointer to a fresh options struct holding the defaults,
	// or nil when the gate takes no options.
	Options func() any
	// New validates the decoded options and builds the gate.
	New func(opts any, env Env) (Gate, error)
}

// Registry maps factory names to factories.
type Registry map[string]Factory
