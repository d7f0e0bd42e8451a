package engine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
)

// The probe gates of the run loop's differential test: each judges by a
// script of verdict letters, one per bid (p pass, f fail, s skip, e expire,
// past its end pass), and writes what it saw into a log the two runs
// compare.
type loopLog struct{ lines []string }

type probeOptions struct {
	V    string `yaml:"v"`    // verdicts
	Prep string `yaml:"prep"` // Prepare's skip reason
}

type bidProbe struct {
	name string
	o    probeOptions
	log  *loopLog
}

func (p *bidProbe) Kind() Kind { return PerBid }

func (p *bidProbe) Prepare(*Input) string { return p.o.Prep }

func (p *bidProbe) CheckBid(in *Input, b *Bid) Verdict {
	i := 0
	for i < len(in.Bids) && &in.Bids[i] != b {
		i++
	}
	var kept []byte
	for j := range in.Bids {
		if in.Passed(j) {
			kept = append(kept, byte('0'+j%10))
		}
	}
	p.log.lines = append(p.log.lines, fmt.Sprintf("%s bid %d passed %s", p.name, i, kept))
	switch letter(p.o.V, i) {
	case 'f':
		return Reject(p.name+" fails", LossInvalidBidResponse, NBRResponseRejectedGeneral).WithDetails(i)
	case 's':
		return SkipBid(p.name+" skips", "why"+p.name)
	case 'e':
		return Expire(p.name + " expires")
	}
	return Pass()
}

func letter(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 'p'
}

type respProbe struct {
	name string
	o    probeOptions
}

func (p *respProbe) Kind() Kind { return Response }

func (p *respProbe) CheckResponse(*Input) Verdict {
	switch letter(p.o.V, 0) {
	case 'f':
		return Reject(p.name+" fails", LossInvalidBidResponse, NBRResponseRejectedGeneral)
	case 's':
		return Skip(p.name + " skips")
	}
	return Pass()
}

// scanProbe hits the bids its script marks h (the response for a last
// letter r), ticking once per bid in scope.
type scanProbe struct {
	name string
	o    probeOptions
}

func (p *scanProbe) Kind() Kind { return Scan }

func (p *scanProbe) Scan(in *Input, sc *Scope) {
	for _, b := range sc.Bids() {
		if !sc.InScope(int(b)) {
			continue
		}
		if !sc.Tick() {
			return
		}
		if letter(p.o.V, int(b)) == 'h' {
			sc.Hit(int(b), Reject(p.name+" hits", LossCreativeFilteredGeneral, NBRResponseRejectedInvalidCreative))
		}
	}
	if strings.HasSuffix(p.o.V, "r") && sc.ResponseLevel() {
		sc.Hit(-1, Reject(p.name+" hits the response", LossInvalidBidResponse, NBRResponseRejectedGeneral))
	}
}

// guardProbe expires when less than V's length in clock steps is left.
type guardProbe struct{ o probeOptions }

func (p *guardProbe) Kind() Kind { return Guard }

func (p *guardProbe) CheckDeadline(in *Input) Verdict {
	if in.Deadline.Sub(in.Now()) < time.Duration(len(p.o.V))*loopStep {
		return Expire("guard expires")
	}
	return Pass()
}

const loopStep = time.Millisecond

func loopRegistry(log *loopLog) Registry {
	opts := func() any { return &probeOptions{} }
	return Registry{
		"pbid": {Name: "pbid", ResultName: "pbid", Kind: PerBid, Options: opts,
			New: func(o any, _ Env) (Gate, error) { return &bidProbe{o: *o.(*probeOptions), log: log}, nil }},
		"presp": {Name: "presp", ResultName: "presp", Kind: Response, Options: opts,
			New: func(o any, _ Env) (Gate, error) { return &respProbe{o: *o.(*probeOptions)}, nil }},
		"pscan": {Name: "pscan", ResultName: "pscan", Kind: Scan, Options: opts,
			New: func(o any, _ Env) (Gate, error) { return &scanProbe{o: *o.(*probeOptions)}, nil }},
		"pguard": {Name: "pguard", ResultName: "pguard", Kind: Guard, Options: opts,
			New: func(o any, _ Env) (Gate, error) { return &guardProbe{o: *o.(*probeOptions)}, nil }},
	}
}

// loopCase is a config, a response and run options, all read from data.
type loopCase struct {
	yaml, resp string
	opt        RunOptions
	deadline   int // in clock steps after the arrival
	frozen     bool
}

type byteReader struct{ data []byte }

func (r *byteReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	c := r.data[0]
	r.data = r.data[1:]
	return c
}

func (r *byteReader) script(letters string) string {
	n := int(r.next() % 8)
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[int(r.next())%len(letters)]
	}
	return string(b)
}

func genLoopCase(data []byte) loopCase {
	r := &byteReader{data: data}
	var c loopCase
	var y strings.Builder
	gate := func(indent string, k int, seat bool) {
		kinds := []string{"pbid", "pbid", "pbid", "presp", "pscan", "pguard"}
		if seat {
			kinds = []string{"pbid", "pbid", "pscan"}
		}
		kind := kinds[int(r.next())%len(kinds)]
		mode := []string{"enforce", "enforce", "warn", "off"}[r.next()%4]
		if kind == "pguard" && mode == "warn" {
			mode = "enforce"
		}
		letters := map[string]string{"pbid": "ppppffse", "presp": "pppfs", "pscan": "pphhr", "pguard": "x"}[kind]
		v := r.script(letters)
		prep := ""
		if kind == "pbid" && r.next()%8 == 0 {
			prep = "no such field"
		}
		fmt.Fprintf(&y, "%s- {gate: %s, name: g%d, mode: %s, options: {v: %q, prep: %q}}\n", indent, kind, k, mode, v, prep)
	}
	fmt.Fprintf(&y, "policy:\n  action: %s\n  failFast: %v\n", []string{"enforce", "shadow"}[r.next()%2], r.next()%3 != 0)
	ng := int(r.next() % 12)
	if ng == 0 {
		y.WriteString("  gates: []\n")
	} else {
		y.WriteString("  gates:\n")
	}
	for k := range ng {
		gate("    ", k, false)
	}
	seats := int(r.next() % 3)
	if seats > 0 {
		y.WriteString("seats:\n")
	}
	for s := 1; s <= seats; s++ {
		fmt.Fprintf(&y, "  s%d:\n    action: %s\n    failFast: %v\n    addGates:\n", s, []string{"enforce", "shadow"}[r.next()%2], r.next()%2 == 0)
		for k := range int(r.next()%4) + 1 {
			gate("      ", 100*s+k, true)
		}
	}
	c.yaml = y.String()
	var resp strings.Builder
	resp.WriteString(`{"id":"r","seatbid":[`)
	nb := int(r.next() % 80)
	for i := range nb {
		if i > 0 {
			resp.WriteByte(',')
		}
		fmt.Fprintf(&resp, `{"seat":"s%d","bid":[{"id":"b%d","impid":"1","price":1}]}`, r.next()%3, i)
	}
	resp.WriteString(`]}`)
	c.resp = resp.String()
	c.opt = RunOptions{All: r.next()%4 == 0, TimeGates: r.next()%2 == 0}
	c.deadline = int(r.next())
	c.frozen = r.next()%8 == 0
	return c
}

// compileLoopCase compiles c's config over the probe gates, which write
// into log.
func compileLoopCase(t *testing.T, c loopCase, log *loopLog) *Snapshot {
	t.Helper()
	cfg, err := config.Parse("loop.yaml", []byte(c.yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, c.yaml)
	}
	snap, err := Compile(cfg, "loop.yaml", []byte(c.yaml), loopRegistry(log))
	if err != nil {
		t.Fatalf("%v\n%s", err, c.yaml)
	}
	for _, p := range snap.policies {
		for _, g := range p.Gates {
			switch x := g.Gate.(type) {
			case *bidProbe:
				x.name = p.Key + "/" + g.Name
			case *respProbe:
				x.name = g.Name
			case *scanProbe:
				x.name = g.Name
			}
		}
	}
	return snap
}

// runLoopCase runs c under snap on a fresh Eval, with refRun or Run, under
// a clock that moves one step a reading, and returns the outcome, the
// probes' log and the number of readings.
func runLoopCase(t *testing.T, c loopCase, snap *Snapshot, log *loopLog, ref bool) (Outcome, []string, int) {
	t.Helper()
	log.lines = nil
	base := time.Unix(1_700_000_000, 0)
	reads := 0
	now := func() time.Time { reads++; return base.Add(time.Duration(reads) * loopStep) }
	defer func() { clockNow, clockSince = time.Now, time.Since }()
	clockNow = now
	clockSince = func(t time.Time) time.Duration { return now().Sub(t) }
	ev := AcquireEval()
	defer ReleaseEval(ev)
	if err := ev.DecodeRequest([]byte(`{"id":"r","imp":[{"id":"1"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := ev.DecodeResponse([]byte(c.resp), 1000); err != nil {
		t.Fatal(err)
	}
	ev.SetDeadline(base, base.Add(time.Duration(c.deadline)*loopStep))
	if c.frozen {
		ev.In.FreezeClock(base.Add(time.Duration(c.deadline/2) * loopStep))
	}
	var out *Outcome
	if ref {
		out = ev.refRun(snap, c.opt)
	} else {
		out = ev.Run(snap, c.opt)
	}
	o := *out
	o.Gates = append([]GateResult(nil), o.Gates...)
	o.Bids = append([]BidVerdict(nil), o.Bids...)
	o.Rejected = append([]Hit(nil), o.Rejected...)
	o.Warned = append([]Hit(nil), o.Warned...)
	o.Skips = append([]BidSkip(nil), o.Skips...)
	if ev.In.Passed(0) {
		t.Fatal("a bid is passed after the run")
	}
	return o, log.lines, reads
}

func checkLoopCase(t *testing.T, data []byte) {
	c := genLoopCase(data)
	log := &loopLog{}
	snap := compileLoopCase(t, c, log)
	want, wantLog, wantReads := runLoopCase(t, c, snap, log, true)
	got, gotLog, gotReads := runLoopCase(t, c, snap, log, false)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outcome differs\nconfig:\n%s\nresponse: %s\noptions: %+v deadline %d\ngot:  %+v\nwant: %+v", c.yaml, c.resp, c.opt, c.deadline, got, want)
	}
	if !reflect.DeepEqual(gotLog, wantLog) {
		t.Fatalf("the gates saw different runs\nconfig:\n%s\ngot:  %q\nwant: %q", c.yaml, gotLog, wantLog)
	}
	if gotReads != wantReads {
		t.Fatalf("clock reads: got %d, want %d\nconfig:\n%s", gotReads, wantReads, c.yaml)
	}
}

// TestRunLoopDifferential: Run gives the outcome, the passed sets the gates
// see and the clock readings of refRun on random configs of probe gates
// (every kind and mode, Prepare skips, failFast, shadow, seat policies,
// --all, timed gates, deadlines anywhere, a frozen clock) and responses of
// up to 79 bids.
func TestRunLoopDifferential(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	seed := uint64(0x9e3779b97f4a7c15)
	for range n {
		data := make([]byte, 256)
		for i := range data {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			data[i] = byte(seed)
		}
		checkLoopCase(t, data)
	}
}

func FuzzRunLoopDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x01\x05\x00\x00\x03ppf\x01\x02\x02\x01\x01\x01\x00\x03sfp\x00\x20\x00\x01\x02\x00\x01\x02\x01\x00\x09"))
	f.Fuzz(func(t *testing.T, data []byte) { checkLoopCase(t, data) })
}

// impProbe fails a bid whose ImpOf is not ImpByID(ImpID).
type impProbe struct{}

func (impProbe) Kind() Kind            { return PerBid }
func (impProbe) Prepare(*Input) string { return "" }
func (impProbe) CheckBid(in *Input, b *Bid) Verdict {
	if !b.impKnown || in.ImpOf(b) != in.ImpByID(b.ImpID) {
		return Reject("ImpOf differs", LossInvalidBidResponse, NBRResponseRejectedGeneral)
	}
	return Pass()
}

// TestImpOfIsImpByID: during a run ImpOf is the engine's lookup and equals
// ImpByID's, on requests of few and of many imps (ImpByID's map), with
// repeated, empty and missing ids; after the run it is ImpByID again.
func TestImpOfIsImpByID(t *testing.T) {
	reg := Registry{"imp": {Name: "imp", ResultName: "imp", Kind: PerBid,
		New: func(any, Env) (Gate, error) { return impProbe{}, nil }}}
	const yaml = "policy:\n  failFast: false\n  gates:\n    - gate: imp\n"
	cfg, err := config.Parse("imp.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := Compile(cfg, "imp.yaml", []byte(yaml), reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, imps := range []int{0, 1, 3, 16, 17, 40} {
		var req, resp strings.Builder
		req.WriteString(`{"id":"r","imp":[`)
		for i := range imps {
			if i > 0 {
				req.WriteByte(',')
			}
			id := fmt.Sprint(i % 7) // repeated ids past 7
			if i == 5 {
				id = ""
			}
			fmt.Fprintf(&req, `{"id":%q,"tagid":"t%d"}`, id, i)
		}
		req.WriteString(`]}`)
		resp.WriteString(`{"id":"r","seatbid":[{"bid":[`)
		for i := range 12 {
			if i > 0 {
				resp.WriteByte(',')
			}
			fmt.Fprintf(&resp, `{"id":"b%d","impid":%q,"price":1}`, i, []string{"0", "1", "5", "6", "", "x", "3", "2", "4", "0", "6", "1"}[i])
		}
		resp.WriteString(`]}]}`)
		ev := AcquireEval()
		if err := ev.DecodeRequest([]byte(req.String())); err != nil {
			t.Fatal(err)
		}
		if err := ev.DecodeResponse([]byte(resp.String()), 1000); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		ev.SetDeadline(now, now.Add(time.Hour))
		out := ev.Run(snap, RunOptions{})
		if len(out.Rejected) != 0 {
			t.Fatalf("%d imps: %+v", imps, out.Rejected)
		}
		for i := range ev.In.Bids {
			b := &ev.In.Bids[i]
			if b.impKnown || b.imp != nil {
				t.Fatalf("%d imps: bid %d keeps its imp after the run", imps, i)
			}
			if ev.In.ImpOf(b) != ev.In.ImpByID(b.ImpID) {
				t.Fatalf("%d imps: bid %d: ImpOf differs after the run", imps, i)
			}
		}
		ReleaseEval(ev)
	}
}

// TestScopeStartResetsEveryField: Scope.start leaves a Scope as the literal
// it replaced did (every field zero but the gate's own, hitBid's and
// pending's storage and the values), whatever the gate before left in it.
func TestScopeStartResetsEveryField(t *testing.T) {
	e := &Eval{snap: &Snapshot{Default: &Policy{Key: "default"}}}
	p, g, r := &Policy{Key: "seat", FailFast: true}, &GateEntry{Name: "g"}, &GateResult{}
	bids := []int32{1, 2}
	s := leftOverScope(t)
	hitBid, pending, values := s.hitBid, s.pending, s.values
	s.start(e, p, bids, g, r)
	want := Scope{e: e, p: p, bids: bids, g: g, r: r, failFast: true, responseLevel: false,
		hitBid: hitBid, pending: pending[:0], values: values}
	if !reflect.DeepEqual(*s, want) {
		t.Fatalf("after start:\n%+v\nwant\n%+v", *s, want)
	}
	if pending[0] != (pendingHit{}) {
		t.Fatal("start keeps the pending hits of the gate before")
	}
}

// TestScopeResetResetsEveryField: reset leaves nothing but the storage of
// hitBid, pending and the values, emptied.
func TestScopeResetResetsEveryField(t *testing.T) {
	s := leftOverScope(t)
	hitBid, pending := s.hitBid, s.pending
	s.reset()
	var values ScanValues
	values.reset()
	want := Scope{hitBid: hitBid[:0], pending: pending[:0], values: values}
	if !reflect.DeepEqual(*s, want) {
		t.Fatalf("after reset:\n%+v\nwant\n%+v", *s, want)
	}
	if pending[0] != (pendingHit{}) {
		t.Fatal("reset keeps the pending hits")
	}
}

// leftOverScope returns a Scope with every field set: each bool true, each
// string, slice and pointer non-nil, the verdict failed, the values built.
func leftOverScope(t *testing.T) *Scope {
	var s Scope
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem()
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("left over")
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 3, 3))
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[Verdict]() {
				f.Set(reflect.ValueOf(Reject("left over", 1, 2)))
				continue
			}
			if f.Type() != reflect.TypeFor[ScanValues]() {
				t.Fatalf("field %s: a struct the test does not know", v.Type().Field(i).Name)
			}
			s.values.built = true
		default:
			t.Fatalf("field %s: a kind the test does not know: %s", v.Type().Field(i).Name, f.Kind())
		}
	}
	s.pending[0] = pendingHit{bid: 1, v: Reject("left over", 1, 2)}
	return &s
}

// TestResultsAreResult: the results a run begins a policy with are those
// result writes gate by gate, copied from the default policy's template or
// written for a seat policy, over slots a previous run left dirty.
func TestResultsAreResult(t *testing.T) {
	c := loopCase{yaml: `policy:
  gates:
    - {gate: pguard, name: g0}
    - {gate: pbid, name: g1, mode: warn}
    - {gate: presp, name: g2, mode: off}
    - {gate: pscan, name: g3}
seats:
  s1:
    addGates:
      - {gate: pbid, name: g4, mode: warn}
`}
	snap := compileLoopCase(t, c, &loopLog{})
	require.NotNil(t, snap.Default.results)
	require.Len(t, snap.policies, 2)
	for _, p := range snap.policies {
		require.Equal(t, p == snap.Default, p.results != nil, p.Key)
		var want Eval
		for _, g := range p.Gates {
			want.result(p, g)
		}
		dirty := GateResult{Policy: "x", Name: "x", Mode: "x", Skipped: true, Reason: "x", LatencyNs: 1, Details: 1, Entry: &GateEntry{}}
		var e Eval
		e.Out.Gates = append(e.Out.Gates, dirty, dirty)
		for range p.Gates {
			e.Out.Gates = append(e.Out.Gates, dirty)
		}
		e.Out.Gates = e.Out.Gates[:1]
		got := e.results(p)
		require.Equal(t, want.Out.Gates, got, p.Key)
		require.Len(t, e.Out.Gates, 1+len(p.Gates))
		require.Equal(t, dirty, e.Out.Gates[0], "the results before kept")
	}
}

// TestPassedSetNumbers: a per-bid gate's run starts with nothing passed
// though no one cleared what earlier runs passed, across an Input's reset
// too (which keeps the count of runs), and when the run numbers wrap.
func TestPassedSetNumbers(t *testing.T) {
	var in Input
	in.Bids = make([]Bid, 3)
	in.startGate(3)
	in.pass(0, true)
	in.pass(1, false)
	require.True(t, in.Passed(0))
	require.False(t, in.Passed(1), "not standing: not passed")
	in.endGate()
	require.False(t, in.Passed(0), "outside a run")
	in.startGate(3)
	require.False(t, in.Passed(0), "an earlier run's pass")
	in.pass(2, true)
	in.endGate()
	runs := in.gateRuns
	in.reset()
	require.Equal(t, runs, in.gateRuns)
	in.Bids = make([]Bid, 3)
	in.startGate(3)
	require.False(t, in.Passed(2), "a pass before the reset")
	in.endGate()
	// The number after the last is 0, which means no run: the set is
	// cleared and numbering starts again at 1, which an entry of run 1,
	// long ago, may hold.
	in.gateRuns = ^uint32(0) - 1
	in.startGate(3)
	in.pass(0, true)
	in.endGate()
	in.passedBy[2] = 1
	in.startGate(3)
	require.Equal(t, uint32(1), in.gateRun)
	require.False(t, in.Passed(2), "wrapped: cleared")
	require.False(t, in.Passed(0))
}

// TestResetsAreTheLiterals: Input.reset and Outcome.reset, which zero in
// place and put the storage back, leave what assigning the literal of the
// kept storage left, after a run that set their fields.
func TestResetsAreTheLiterals(t *testing.T) {
	c := genLoopCase([]byte("\x01\x01\x05\x00\x00\x03ppf\x01\x02\x02\x01\x01\x01\x00\x03sfp\x00\x20\x00\x01\x02\x00\x01\x02\x01\x00\x09"))
	log := &loopLog{}
	snap := compileLoopCase(t, c, log)
	e := AcquireEval()
	defer ReleaseEval(e)
	require.NoError(t, e.DecodeRequest([]byte(`{"id":"r","imp":[{"id":"1"}]}`)))
	require.NoError(t, e.DecodeResponse([]byte(c.resp), 1000))
	e.SetLatency(3)
	e.In.FreezeClock(time.Unix(1, 0))
	e.Run(snap, RunOptions{All: true, TimeGates: true})
	require.NotEmpty(t, e.Out.Gates)
	e.In.impIndex, e.In.bidIndex = map[string]int{"x": 1}, map[string]int{"y": 2}
	e.In.startGate(len(e.In.Bids))

	in := e.In
	clear(in.impIndex)
	clear(in.bidIndex)
	want := Input{Bids: in.Bids[:0], impIndex: in.impIndex, bidIndex: in.bidIndex, passedBy: in.passedBy[:0], gateRuns: in.gateRuns}
	e.In.reset()
	require.Equal(t, want, e.In)

	o := e.Out
	wantOut := Outcome{Gates: o.Gates[:0], Bids: o.Bids[:0], Rejected: o.Rejected[:0], Warned: o.Warned[:0], Skips: o.Skips[:0]}
	e.Out.reset()
	require.Equal(t, wantOut, e.Out)
}
