package engine

// Scope is what a scanning gate sees of the engine while it scans: which bids
// it judges and where its hits go. It belongs to the running Eval and must not
// be retained after Scan returns.
type Scope struct {
	e             *Eval
	p             *Policy
	g             *GateEntry
	r             *GateResult
	failFast      bool
	responseLevel bool
	timedOut      bool
	stopped       bool
	ticks         int
	skip          string
	hitBid        []bool
}

// InScope reports whether the gate judges bid i (an index into Input.Bids):
// the bid belongs to this policy and was not rejected earlier under failFast.
func (s *Scope) InScope(i int) bool {
	st := &s.e.states[i]
	return st.policy == s.p && !(s.failFast && st.dead)
}

// ResponseLevel reports whether values outside the bids are judged (true in
// the default policy; a seat policy scans only its bids).
func (s *Scope) ResponseLevel() bool { return s.responseLevel }

// Tick is called once per bid entered. Every 64 bids it reads the clock; it
// returns false when the scan must stop (deadline passed, or the response
// rejected under failFast).
func (s *Scope) Tick() bool {
	if s.stopped {
		return false
	}
	s.ticks++
	if in := &s.e.In; s.ticks%clockEvery == 0 && !in.at(in.readClock()).Before(in.Deadline) {
		s.timedOut, s.stopped = true, true
	}
	return !s.stopped
}

// Hit reports a failing verdict for bid i, or for the response when i < 0.
// Only the first hit per bid counts. It returns false when the scan should
// stop.
func (s *Scope) Hit(i int, v Verdict) bool {
	if s.stopped {
		return false
	}
	if s.r.Passed {
		s.r.Passed, s.r.Reason, s.r.Details = false, v.Reason, v.Details
	}
	if i < 0 {
		s.e.responseHit(s.g, s.g.Name, v)
		if s.failFast && s.g.Mode != Warn && s.e.respDie {
			s.stopped = true
		}
		return !s.stopped
	}
	if s.hitBid == nil {
		s.hitBid = make([]bool, len(s.e.In.Bids))
	}
	if s.hitBid[i] {
		return true
	}
	s.hitBid[i] = true
	s.e.bidHit(s.p, s.g, i, v)
	return true
}

// Skip marks the gate skipped with reason, when it reported no hit.
func (s *Scope) Skip(reason string) { s.skip = reason }

func (s *Scope) anyInScope() bool {
	for i := range s.e.states {
		if s.InScope(i) {
			return true
		}
	}
	return false
}
