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
// A matcher that declares the shortest string it can hit (shortBound) is
// not passed shorter ones.
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

// shortBound is a stringMatcher that never hits a string shorter than
// minLen bytes; scanResponse does not pass it those.
type shortBound interface {
	minLen() int
}

// scanScope is what the scanning gates use of *engine.Scope; tests and
// benchmarks pass a fake.
type scanScope interface {
	Values() *engine.ScanValues
	InScope(i int) bool
	ResponseLevel() bool
	Bids() []int32
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
// is read at most once: in the default policy every segment in document
// order, in a seat policy only its bids' segments. The walk is linear in the
// response, however many seat policies scan their share of it.
func scanResponse(sc scanScope, m stringMatcher, lim scanLimit) {
	short := 0
	if b, ok := m.(shortBound); ok {
		short = b.minLen()
	}
	vals := sc.Values()
	segs := vals.Segments()
	if !sc.ResponseLevel() {
		for _, b := range sc.Bids() {
			if !sc.InScope(int(b)) {
				continue
			}
			if !sc.Tick() {
				return
			}
			for si := vals.FirstSegment(int(b)); si >= 0; si = segs[si].Next {
				scanSegment(sc, vals, &segs[si], m, short, lim)
			}
		}
		return
	}
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
		} else if respHit {
			// Later response-level strings are not matched; the envelope
			// budget is reported all the same.
			overrunSegment(sc, seg, lim)
			continue
		}
		hit, stop := scanSegment(sc, vals, seg, m, short, lim)
		if stop {
			return
		}
		respHit = respHit || hit && seg.Bid < 0
	}
}

// scanSegment matches the strings of seg within its budget, those of
// short bytes and more, and reports its first hit, then its overrun. hit
// says a hit was reported; stop that the scan must end (a response-level
// hit that rejects the response).
func scanSegment(sc scanScope, vals *engine.ScanValues, seg *engine.ScanSegment, m stringMatcher, short int, lim scanLimit) (hit, stop bool) {
	// Strings shorter than short are skipped before they are fetched; the
	// positions grow, so the first longer one over the budget ends the scan
	// as the first string over it would.
	strs := vals.StringsOf(seg)
	for j := strs.Skip(0, short); j < strs.Len(); j = strs.Skip(j+1, short) {
		s, node := strs.At(j)
		if seg.Before+node > lim.maxNodes {
			break
		}
		reason := m.match(s)
		if reason == "" {
			continue
		}
		hit = true
		if seg.Bid >= 0 {
			sc.Hit(seg.Bid, engine.Reject(reason, scanBidLoss, scanBidNBR))
			break
		}
		if !sc.Hit(-1, engine.Reject(reason, scanResponseLoss, scanResponseNBR)) {
			return true, true
		}
		break
	}
	overrunSegment(sc, seg, lim)
	return hit, false
}

// overrunSegment reports seg's bid (the envelope) over its budget: values
// past it were not scanned. A hit found in it first stays its entry
// (Scope.Overrun).
// It is inlined: a segment within its budget costs a comparison.
func overrunSegment(sc scanScope, seg *engine.ScanSegment, lim scanLimit) {
	if seg.Before+seg.Nodes > lim.maxNodes && !lim.pass {
		reportOverrun(sc, seg.Bid)
	}
}

// reportOverrun is kept out of line, so that overrunSegment stays small
// enough to inline.
//
//go:noinline
func reportOverrun(sc scanScope, bid int) {
	sc.Overrun(bid, engine.Reject(reasonScanLimit, scanResponseLoss, scanResponseNBR))
}
