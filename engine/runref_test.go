package engine

// The run loop as it was before runBids read verdicts by their state and
// the deadline checks read Input.late (kept as the reference of
// TestRunLoopDifferential and FuzzRunLoopDifferential): refRun is Run
// with the former runPolicy, runBids, result and Input.work.

func (e *Eval) refRun(snap *Snapshot, opt RunOptions) *Outcome {
	e.snap, e.all, e.timed = snap, opt.All, opt.TimeGates
	e.In.Quarantine, e.In.Upstream = snap.Quarantine, opt.Upstream
	e.stop = ""
	e.Out.reset()
	e.Out.Timed = opt.TimeGates
	in := &e.In
	in.Rates = snap.Rates
	e.scope.newRequest(len(e.In.Bids))
	in.resetClock()
	if in.Response == nil {
		in.Response = &e.msgs.out
	}
	if in.Request == nil {
		in.Request = &e.msgs.req.BidRequest
	}
	bids := in.Bids
	if cap(e.Out.Bids) < len(bids) {
		e.Out.Bids = make([]BidVerdict, len(bids))
	}
	e.Out.Bids = e.Out.Bids[:len(bids)]
	e.groupByPolicy(opt.Upstream)
	switch {
	case len(bids) == 0 && !e.msgs.info.TooManyBids:
		e.runEmpty()
	case e.msgs.info.TooManyBids:
		e.runTooMany()
	default:
		for i := range e.order {
			e.refRunPolicy(&e.order[i])
		}
	}
	e.finish()
	in.resetClock()
	return &e.Out
}

func (e *Eval) refResult(p *Policy, g *GateEntry) *GateResult {
	e.Out.Gates = append(e.Out.Gates, GateResult{Policy: p.Key, Name: g.Name, Mode: refModeString(g.Mode), Passed: true, Entry: g})
	return &e.Out.Gates[len(e.Out.Gates)-1]
}

func refModeString(m Mode) string {
	switch m {
	case Warn:
		return "warn"
	case Off:
		return "off"
	}
	return "enforce"
}

func (in *Input) refWork(n int) (expired bool) {
	in.worked += n
	return in.worked >= clockEvery && !in.at(in.readClock()).Before(in.Deadline)
}

func (e *Eval) refRunPolicy(sp *policySpan) {
	p := sp.p
	in := &e.In
	def := e.snap.Default
	// Timed, one clock read per gate run: the end of one gate is the start
	// of the next, its latency's origin and the instant of its deadline
	// check. Untimed, the deadline checks use the last reading, taken at
	// most clockEvery units of judging ago (a guard, which reads the
	// deadline itself, gets a fresh one when any judging came before it).
	start := in.readClock()
	for _, g := range p.Gates {
		r := e.refResult(p, g)
		// A gate in mode off is reported as off whatever stopped the run
		// before it: it would never have run.
		if g.Mode == Off {
			skipped(r, ReasonOff)
			continue
		}
		if e.stop != "" {
			skipped(r, e.stop)
			continue
		}
		if e.Out.Response.Failed() && e.failFast(def) {
			skipped(r, ReasonSkipFailFast)
			continue
		}
		if g.Kind == Guard && !e.timed && in.worked > 0 {
			in.readClock()
		}
		if g.Kind != Guard && !in.Now().Before(in.Deadline) {
			e.timeout(g, r)
			continue
		}
		switch g.Kind {
		case Guard:
			e.runGuard(g, r)
		case Response:
			e.runResponse(p, g, r)
		case PerBid:
			e.refRunBids(sp, g, r)
		case Scan:
			e.runScan(sp, g, r)
		}
		if e.timed {
			end := in.readClock()
			r.LatencyNs = int64(end.Sub(start))
			start = end
		}
	}
}

func (e *Eval) refRunBids(sp *policySpan, g *GateEntry, r *GateResult) {
	p := sp.p
	in := &e.In
	if skip := g.bid.Prepare(in); skip != "" {
		skipped(r, skip)
		return
	}
	ff := e.failFast(p)
	judged, dead := 0, 0
	firstSkip := ""
	in.startGate(len(in.Bids))
	defer in.endGate()
	for _, i := range e.bidsOf(sp) {
		bv := &e.Out.Bids[i]
		if ff && bv.Failed() {
			dead++
			continue
		}
		if in.refWork(1) {
			e.timeout(g, r)
			return
		}
		standing := !bv.Failed()
		v := g.bid.CheckBid(in, &in.Bids[i])
		in.pass(i, standing && !v.Failed() && !v.Skipped())
		switch {
		case v.Skipped():
			why, _ := v.Details.(string)
			e.Out.Skips = append(e.Out.Skips, BidSkip{Gate: g.Name, Why: why})
			if firstSkip == "" {
				firstSkip = v.Reason
			}
			continue
		case v.Failed():
			if r.Passed {
				r.Passed, r.Reason, r.Details = false, v.Reason, v.Details
			}
			e.bidHit(p, g, int(i), v)
		}
		judged++
	}
	if judged == 0 {
		switch {
		case firstSkip != "":
			skipped(r, firstSkip)
		case dead > 0:
			skipped(r, ReasonSkipFailFast)
		default:
			skipped(r, ReasonNoBids)
		}
	}
}
