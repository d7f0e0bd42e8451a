package gates

// The scan shared by the scanning gates filesystem, pii and content
// (and their scan budgets). The engine walks the raw response once per
// request into engine.ScanValues (every value in document order, keys left
// out, strings decoded, each value attributed to the bid it lies in or to
// the envelope, the values outside every bid); scanResponse matches one
// gate's strings from it:
//   - in the default policy (Scope.ResponseLevel) every value, in a seat
//     policy only its bids' values;
//   - a bid out of scope (another policy's, or rejected earlier under
//     failFast) is neither matched nor counted;
//   - maxNodes is a budget per bid and one for the envelope: each counts its
//     values (objects, arrays, strings, numbers and literals) in document
//     order; strings past a budget are not matched, and a hit found before
//     it counts either way;
//   - a bid's first hit is reported (200 / 350) and the rest of the bid is
//     not matched; the first response-level hit is reported (3 / 300) and
//     later response-level strings are not matched;
//   - over a budget, unless onScanLimit is pass: `scan limit exceeded`
//     (3 / 300) for that bid alone, or for the response when the envelope
//     is over its own (default policy only).
//
// Which entries are listed (a response-level hit that rejects the response
// is the gate's only one) is the engine's rule (engine.Scope). Matching
// allocates nothing.

import (
	"errors"

	"github.com/bidguard/bidguard/engine"
)

// stringMatcher judges one decoded string value. It returns the reason of its
// first hit, or "" for none. s is only valid during the call.
type stringMatcher interface {
	match(s []byte) string
}

// scanScope is what the scanning gates use of *engine.Scope; tests and
// benchmarks pass a fake.
type scanScope interface {
	Values() *engine.ScanValues
	InScope(i int) bool
	ResponseLevel() bool
	Tick() bool
	Hit(i int, v engine.Verdict) bool
	Overrun(i int, v engine.Verdict)
}

var _ scanScope = (*engine.Scope)(nil)

// Scan limit defaults and values, and the codes of scanning hits.
const (
	defaultMaxNodes  = 10000
	onScanLimitFail  = "fail"
	onScanLimitPass  = "pass"
	reasonScanLimit  = "scan limit exceeded"
	scanBidLoss      = engine.LossCreativeFilteredGeneral
	scanBidNBR       = engine.NBRResponseRejectedInvalidCreative
	scanResponseLoss = engine.LossInvalidBidResponse
	scanResponseNBR  = engine.NBRResponseRejectedGeneral
)

// scanLimit is the compiled scan-limit options of a scanning gate.
type scanLimit struct {
	maxNodes int
	pass     bool // onScanLimit: pass
}

// newScanLimit validates maxNodes and onScanLimit ("" means the default).
func newScanLimit(maxNodes int, onScanLimit string) (scanLimit, error) {
	var errs []error
	if maxNodes <= 0 {
		errs = append(errs, errors.New("maxNodes must be > 0"))
	}
	switch onScanLimit {
	case "", onScanLimitFail, onScanLimitPass:
	default:
		errs = append(errs, errors.New("onScanLimit must be fail or pass"))
	}
	return scanLimit{maxNodes: maxNodes, pass: onScanLimit == onScanLimitPass}, errors.Join(errs...)
}

// scanResponse matches m against the strings of the response in scope and
// reports every hit, and each scan budget overrun, through sc. Each segment
// is read once: the walk is linear in the response's values.
func scanResponse(sc scanScope, m stringMatcher, lim scanLimit) {
	vals := sc.Values()
	segs := vals.Segments()
	respLevel := sc.ResponseLevel()
	respHit := false
	for si := range segs {
		seg := &segs[si]
		if seg.Bid >= 0 {
			if !sc.InScope(seg.Bid) {
				continue
			}
			if !sc.Tick() {
				return
			}
		} else if !respLevel {
			continue
		}
		if seg.Bid >= 0 || !respHit {
			for j := range seg.Strings() {
				s, node := vals.String(seg, j)
				if seg.Before+node > lim.maxNodes {
					break
				}
				reason := m.match(s)
				if reason == "" {
					continue
				}
				if seg.Bid >= 0 {
					sc.Hit(seg.Bid, engine.Reject(reason, scanBidLoss, scanBidNBR))
					break
				}
				respHit = true
				if !sc.Hit(-1, engine.Reject(reason, scanResponseLoss, scanResponseNBR)) {
					return
				}
				break
			}
		}
		if seg.Before+seg.Nodes > lim.maxNodes && !lim.pass {
			// The bid (the envelope) holds values past its budget; a hit
			// found in it first stays its entry (Scope.Overrun).
			sc.Overrun(seg.Bid, engine.Reject(reasonScanLimit, scanResponseLoss, scanResponseNBR))
		}
	}
}
