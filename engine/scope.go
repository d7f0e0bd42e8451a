package engine

// Scope is what a scanning gate sees of the engine while it scans: which bids
// it judges, the response's values (walked once per request) and where its
// hits go. It belongs to the running Eval and must not be retained after Scan
// returns.
//
// A gate's hits are recorded when it returns, so that what it reports does
// not depend on where in the document it found them (docs/gates.md,
// "Scanning"): a response-level hit that rejects the response (the gate is not
// in warn mode) is the gate's only entry, wherever the bids' hits lie, except
// under `check --all`, which lists every hit. Otherwise each bid's first hit,
// then the response-level one, are recorded. A scan budget overrun (Overrun:
// a bid's, or the envelope's for the response) is recorded like a hit but
// never makes its entry the only one: hits found before the limit count
// either way.
type Scope struct {
	e             *Eval
	p             *Policy
	bids          []int32 // the policy's bids
	g             *GateEntry
	r             *GateResult
	failFast      bool
	responseLevel bool
	timedOut      bool
	stopped       bool

	skip    string
	hitBid  []bool       // by bid: this gate reported it
	pending []pendingHit // this gate's bid entries, in the order reported
	resp    Verdict      // this gate's response-level entry
	respHit bool         // resp is a hit (not an overrun)
	hasResp bool

	values ScanValues // once per request; values.built says whether
}

type pendingHit struct {
	bid int
	v   Verdict
}

// start prepares the Scope for gate g of policy p, whose bids are bids,
// keeping the storage of earlier gates and the request's values. It costs
// nothing per bid: hitBid, cleared once per request, is cleared again by
// record for the bids the gate reported.
// The fields are set one by one: a Scope literal would copy the values
// through the stack. TestScopeStartResetsEveryField holds that start
// leaves nothing of the gate before but hitBid's and pending's storage and
// the values.
func (s *Scope) start(e *Eval, p *Policy, bids []int32, g *GateEntry, r *GateResult) {
	clear(s.pending)
	s.e, s.p, s.bids, s.g, s.r = e, p, bids, g, r
	s.failFast, s.responseLevel, s.timedOut, s.stopped = e.failFast(p), p == e.snap.Default, false, false
	s.skip, s.pending = "", s.pending[:0]
	s.resp, s.respHit, s.hasResp = Verdict{}, false, false
}

// newRequest forgets the values and hits of the previous request.
func (s *Scope) newRequest(bids int) {
	s.values.built = false
	if cap(s.hitBid) < bids {
		s.hitBid = make([]bool, bids)
	}
	s.hitBid = s.hitBid[:bids]
	clear(s.hitBid)
}

// reset empties the Scope for the pool, keeping the storage of hitBid,
// pending and the values. Field by field, as start: a literal would copy
// the values aside and back. TestScopeResetResetsEveryField holds that it
// leaves nothing else.
func (s *Scope) reset() {
	s.values.reset()
	clear(s.pending)
	s.e, s.p, s.bids, s.g, s.r = nil, nil, nil, nil, nil
	s.failFast, s.responseLevel, s.timedOut, s.stopped = false, false, false, false
	s.skip, s.hitBid, s.pending = "", s.hitBid[:0], s.pending[:0]
	s.resp, s.respHit, s.hasResp = Verdict{}, false, false
}

// Values returns the response's values, walking the raw response on the
// first call of the request.
func (s *Scope) Values() *ScanValues {
	if !s.values.built {
		s.values.Build(&s.e.In)
	}
	return &s.values
}

// InScope reports whether the gate judges bid i (an index into Input.Bids):
// the bid belongs to this policy and was not rejected earlier under failFast.
func (s *Scope) InScope(i int) bool {
	v := &s.e.Out.Bids[i]
	return v.Policy == s.p && !(s.failFast && v.Failed())
}

// ResponseLevel reports whether values outside the bids are judged (true in
// the default policy; a seat policy scans only its bids).
func (s *Scope) ResponseLevel() bool { return s.responseLevel }

// Bids returns the indices in Input.Bids of the policy's bids, in response
// order (InScope says which the gate judges). The slice belongs to the Eval.
func (s *Scope) Bids() []int32 { return s.bids }

// Tick is called once per bid entered: a unit of judging (Input.work). It
// returns false when the scan must stop (deadline passed, or the gate
// rejected the response).
func (s *Scope) Tick() bool {
	if s.stopped {
		return false
	}
	if s.e.In.work(1) {
		s.timedOut, s.stopped = true, true
	}
	return !s.stopped
}

// Hit reports a failing verdict for bid i, or for the response when i < 0.
// Only the first entry per bid, and the first for the response, count. It
// returns false when the scan should stop: the response-level hit is the
// gate's only entry, nothing found later would be listed.
func (s *Scope) Hit(i int, v Verdict) bool {
	if s.stopped {
		return false
	}
	if i >= 0 {
		s.bidEntry(i, v)
		return true
	}
	if !s.hasResp || !s.respHit {
		s.resp, s.respHit, s.hasResp = v, true, true
	}
	if s.g.Mode != Warn && !s.e.all {
		s.stopped = true
	}
	return !s.stopped
}

// Overrun reports that the scan limit left bid i (or, when i < 0, the
// response) not fully scanned, with the verdict onScanLimit gives. Unlike a
// hit, it is recorded only when the bid (the response) has no entry yet.
func (s *Scope) Overrun(i int, v Verdict) {
	if s.stopped {
		return
	}
	if i >= 0 {
		s.bidEntry(i, v)
		return
	}
	if !s.hasResp {
		s.resp, s.hasResp = v, true
	}
}

func (s *Scope) bidEntry(i int, v Verdict) {
	if s.hitBid[i] {
		return
	}
	s.hitBid[i] = true
	s.pending = append(s.pending, pendingHit{bid: i, v: v})
}

// Skip marks the gate skipped with reason, when it reported no hit.
func (s *Scope) Skip(reason string) { s.skip = reason }

// record writes the gate's entries into the outcome and its result: the
// response-level hit alone when it rejects the response (see Scope), else
// the bids' entries and then the response-level one. The result carries the
// response-level hit, else the first bid entry, else the overrun.
func (s *Scope) record() {
	e, r := s.e, s.r
	for _, h := range s.pending {
		s.hitBid[h.bid] = false // for the next gate
	}
	only := s.respHit && s.g.Mode != Warn && !e.all
	if !only {
		for _, h := range s.pending {
			e.bidHit(s.p, s.g, h.bid, h.v)
		}
	}
	var first *Verdict
	switch {
	case s.respHit:
		first = &s.resp
	case len(s.pending) > 0:
		first = &s.pending[0].v
	case s.hasResp:
		first = &s.resp
	}
	if first != nil {
		r.Passed, r.Reason, r.Details = false, first.Reason, first.Details
	}
	if s.hasResp {
		e.responseHit(s.g, s.g.Name, s.resp, false)
	}
}

func (s *Scope) anyInScope() bool {
	for _, i := range s.bids {
		if s.InScope(int(i)) {
			return true
		}
	}
	return false
}
