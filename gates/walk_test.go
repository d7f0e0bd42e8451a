package gates

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// probe is a scanning gate for the walker's tests: it records every string it
// is shown and flags those containing "HIT".
type probe struct {
	limit scanLimit
	seen  *[]string
}

type probeOptions struct {
	MaxNodes    int    `yaml:"maxNodes"`
	OnScanLimit string `yaml:"onScanLimit"`
}

func (p *probe) Kind() engine.Kind { return engine.Scan }

func (p *probe) Scan(_ *engine.Input, sc *engine.Scope) { scanResponse(sc, p, p.limit) }

func (p *probe) match(s []byte) string {
	*p.seen = append(*p.seen, string(s))
	if bytes.Contains(s, []byte("HIT")) {
		return "hit"
	}
	return ""
}

// probeCheck runs request/response under config (whose gates may name
// "probe") and returns the report and the strings the probe saw.
func probeCheck(t *testing.T, config, request, response string) (*engine.Report, []string) {
	t.Helper()
	return probeRun(t, config, request, response, false)
}

// probeCheckAll is probeCheck as `check --all` runs.
func probeCheckAll(t *testing.T, config, request, response string) (*engine.Report, []string) {
	t.Helper()
	return probeRun(t, config, request, response, true)
}

func probeRun(t *testing.T, text, request, response string, all bool) (*engine.Report, []string) {
	t.Helper()
	var seen []string
	reg := Builtin()
	reg["probe"] = engine.Factory{
		Name: "probe", ResultName: "probe", Kind: engine.Scan,
		Options: func() any { return &probeOptions{MaxNodes: defaultMaxNodes} },
		New: func(opts any, _ engine.Env) (engine.Gate, error) {
			o := opts.(*probeOptions)
			lim, err := newScanLimit(o.MaxNodes, o.OnScanLimit)
			return &probe{limit: lim, seen: &seen}, err
		},
	}
	cfg, err := config.Parse("test.yaml", []byte(text))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(text), reg)
	require.NoError(t, err)
	rep, ev, err := engine.Check(snap, []byte(request), []byte(response), engine.CheckOptions{LatencyMs: -1, All: all})
	require.NoError(t, err)
	engine.ReleaseEval(ev)
	return rep, seen
}

const probeRequest = `{"id":"r1","imp":[{"id":"1"},{"id":"2"}]}`

func probeConfig(options string) string {
	return "policy:\n  gates:\n    - gate: probe\n      options: {" + options + "}\n"
}

type hit struct {
	bid, reason string
	loss, nbr   int
}

func hits(rep *engine.Report) []hit { return hitList(rep.Rejected) }

func warned(rep *engine.Report) []hit { return hitList(rep.Warned) }

func hitList(l []engine.Hit) []hit {
	var out []hit
	for _, h := range l {
		out = append(out, hit{h.BidID, h.Reason, h.Loss, h.NBR})
	}
	return out
}

func TestWalkVisitsValuesInDocumentOrder(t *testing.T) {
	resp := `{"id":"r1","ext":{"k":"v\u0041\n","n":[1,true,null,"x\"y"]},` +
		`"seatbid":[{"seat":"s1","ext":{"e":"se"},"bid":[{"id":"b1","impid":"1","price":1,"adm":"a\/b"}]},` +
		`{"bid":[{"id":"b2","impid":"2","price":2}],"seat":"s2","zz":["z"]}],"cur":"USD"}`
	rep, seen := probeCheck(t, probeConfig(""), probeRequest, resp)
	require.True(t, rep.Passed)
	require.Equal(t, []string{"r1", "vA\n", `x"y`, "s1", "se", "b1", "1", "a/b", "b2", "2", "s2", "z", "USD"}, seen)
}

func TestWalkAttributesHits(t *testing.T) {
	f := func(resp string, passed bool, want []hit) {
		t.Helper()
		rep, _ := probeCheck(t, "policy:\n  failFast: false\n  gates:\n    - gate: probe\n", probeRequest, resp)
		require.Equal(t, passed, rep.Passed, resp)
		require.Equal(t, want, hits(rep), resp)
	}
	bids := `[{"id":"b1","impid":"1","price":1,"ext":{"x":["HIT"]}},{"id":"b2","impid":"2","price":1}]`
	// Inside a bid, its ext included: that bid only, 200 / 350.
	f(`{"id":"r1","seatbid":[{"seat":"s","bid":`+bids+`}]}`, false, []hit{{"b1", "hit", 200, 350}})
	// Top-level, seat, seatbid ext, any other seatbid member: the response, 3 / 300.
	f(`{"id":"HIT","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}]}`, false, []hit{{"", "hit", 3, 300}})
	f(`{"id":"r1","seatbid":[{"seat":"HIT","bid":[{"id":"b1","impid":"1","price":1}]}]}`, false, []hit{{"", "hit", 3, 300}})
	f(`{"id":"r1","seatbid":[{"seat":"s","ext":{"a":"HIT"},"bid":[{"id":"b1","impid":"1","price":1}]}]}`, false, []hit{{"", "hit", 3, 300}})
	f(`{"id":"r1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":1}],"zz":"HIT"}]}`, false, []hit{{"", "hit", 3, 300}})
	// Keys are not scanned.
	f(`{"id":"r1","ext":{"HIT":1},"seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"ext":{"HIT":"ok"}}]}]}`, true, nil)
	// Escapes are decoded before matching.
	f(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"adm":"\u0048IT"}]}]}`, false, []hit{{"b1", "hit", 200, 350}})
	// A shadowed duplicate key is scanned: in a bid, the bid's.
	f(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"adm":"HIT","adm":"ok"}]}]}`, false, []hit{{"b1", "hit", 200, 350}})
	// A response-level hit that rejects the response is the gate's only
	// entry, before or after the bids (failFast: false here).
	both := []string{
		`{"id":"r1","cur":"HIT","seatbid":[{"seat":"s","bid":[{"id":"HIT","impid":"1","price":1},{"id":"b2","impid":"HIT","price":1}]}]}`,
		`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"HIT","impid":"1","price":1},{"id":"b2","impid":"HIT","price":1}]}],"cur":"HIT"}`,
		`{"id":"r1","seatbid":[{"bid":[{"id":"HIT","impid":"1","price":1},{"id":"b2","impid":"HIT","price":1}],"seat":"HIT"}]}`,
	}
	for _, resp := range both {
		f(resp, false, []hit{{"", "hit", 3, 300}})
	}
	// In warn mode it rejects nothing: every hit is listed, wherever it lies;
	// `check --all` lists every hit too.
	want := []hit{{"HIT", "hit", 200, 350}, {"b2", "hit", 200, 350}, {"", "hit", 3, 300}}
	for _, resp := range both {
		rep, _ := probeCheck(t, "policy:\n  gates:\n    - gate: probe\n      mode: warn\n", probeRequest, resp)
		require.True(t, rep.Passed, resp)
		require.Equal(t, want, warned(rep), resp)
		rep, _ = probeCheckAll(t, probeConfig(""), probeRequest, resp)
		require.Equal(t, want, hits(rep), resp)
	}
}

func TestWalkStopsAtFirstHitOfABid(t *testing.T) {
	resp := `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"adm":"HIT","crid":"HIT2"},{"id":"b2","impid":"2","price":1}]}]}`
	rep, seen := probeCheck(t, probeConfig(""), probeRequest, resp)
	require.Equal(t, []hit{{"b1", "hit", 200, 350}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b1", "1", "HIT", "b2", "2"}, seen)
}

func TestWalkScansShadowedSeatbidKeys(t *testing.T) {
	// encoding/json decodes the last case-insensitive "seatbid" key; every
	// one is scanned in document order, and seatbid[i].bid[j] of any of them
	// is the decoded bid at that place.
	resp := `{"id":"r1","seatbid":[{"seat":"old","bid":[{"id":"x","impid":"1","price":1,"adm":"HIT"}]}],"SeatBid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}],"cur":"USD"}`
	rep, seen := probeCheck(t, "policy:\n  failFast: false\n  gates:\n    - gate: probe\n", probeRequest, resp)
	require.Equal(t, []string{"r1", "old", "x", "1", "HIT", "s", "b1", "1", "USD"}, seen)
	require.Equal(t, []hit{{"b1", "hit", 200, 350}}, hits(rep))
	// A shadowed bid array of one seatbid, and a place no decoded bid holds.
	resp = `{"id":"r1","seatbid":[{"bid":[{"id":"x"},{"id":"HIT"}],"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}]}`
	rep, seen = probeCheck(t, probeConfig(""), probeRequest, resp)
	require.Equal(t, []string{"r1", "x", "HIT"}, seen, "a rejecting response-level hit ends the scan")
	require.Equal(t, []hit{{"", "hit", 3, 300}}, hits(rep))
}

// scanLimitResp has 7 values outside its bid (the envelope: the object,
// "r1", the seatbid array, the seatbid, "s", the bid array and "USD") and 4
// in it (the bid, "b1", "1" and 1).
const scanLimitResp = `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}],"cur":"USD"}`

func TestWalkScanLimit(t *testing.T) {
	rep, _ := probeCheck(t, probeConfig("maxNodes: 7"), probeRequest, scanLimitResp)
	require.True(t, rep.Passed, "a budget per bid and one for the envelope")
	// The envelope over its budget fails the response.
	rep, seen := probeCheck(t, probeConfig("maxNodes: 6"), probeRequest, scanLimitResp)
	require.Equal(t, []hit{{"", "scan limit exceeded", 3, 300}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b1", "1"}, seen)
	// Both over: the bid fails and the response too.
	rep, seen = probeCheck(t, probeConfig("maxNodes: 3"), probeRequest, scanLimitResp)
	require.Equal(t, []hit{{"b1", "scan limit exceeded", 3, 300}, {"", "scan limit exceeded", 3, 300}}, hits(rep))
	require.Equal(t, []string{"r1", "b1", "1"}, seen)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 3, onScanLimit: pass"), probeRequest, scanLimitResp)
	require.True(t, rep.Passed)
	// A hit found before the limit counts either way, and is reported as
	// itself: "HIT" is the bid's value 2.
	withHit := strings.Replace(scanLimitResp, `"b1"`, `"HIT"`, 1)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 2, onScanLimit: pass"), probeRequest, withHit)
	require.Equal(t, []hit{{"HIT", "hit", 200, 350}}, hits(rep))
	rep, _ = probeCheck(t, probeConfig("maxNodes: 3"), probeRequest, withHit)
	require.Equal(t, []hit{{"HIT", "hit", 200, 350}, {"", "scan limit exceeded", 3, 300}}, hits(rep))
	require.Equal(t, "hit", rep.Gates[0].Reason)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 1"), probeRequest, withHit)
	require.Equal(t, []hit{{"HIT", "scan limit exceeded", 3, 300}, {"", "scan limit exceeded", 3, 300}}, hits(rep))
	// A response-level hit before the limit is the only entry; one after it
	// is not seen.
	respHit := strings.Replace(scanLimitResp, `"r1"`, `"HIT"`, 1)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 3"), probeRequest, respHit)
	require.Equal(t, []hit{{"", "hit", 3, 300}}, hits(rep))
	respHit = strings.Replace(scanLimitResp, `"USD"`, `"HIT"`, 1)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 6"), probeRequest, respHit)
	require.Equal(t, []hit{{"", "scan limit exceeded", 3, 300}}, hits(rep))
	// A top-level value holding a hit and running past the limit: the hit.
	deep := `{"id":"r1","ext":{"a":"HIT","b":[1,2,3,4,5,6,7,8,9,10]},"seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}]}`
	rep, _ = probeCheck(t, probeConfig("maxNodes: 6"), probeRequest, deep)
	require.Equal(t, []hit{{"", "hit", 3, 300}}, hits(rep))
	// A bid over its budget fails alone, wherever it lies; the bids after
	// it are scanned under their own.
	bids := `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"ext":{"a":[1,2,3,4,5]}},` +
		`{"id":"b2","impid":"2","price":1,"adm":"HIT"},{"id":"b3","impid":"2","price":1}]}]}`
	rep, seen = probeCheck(t, "policy:\n  failFast: false\n  gates:\n    - gate: probe\n      options: {maxNodes: 8}\n", probeRequest, bids)
	require.Equal(t, []hit{{"b1", "scan limit exceeded", 3, 300}, {"b2", "hit", 200, 350}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b1", "1", "b2", "2", "HIT", "b3", "2"}, seen)
}

// A bid holding a shadowed copy (a repeated "seatbid" key) counts the values
// of every copy against one budget, in document order.
func TestWalkScanLimitCountsEveryCopyOfABid(t *testing.T) {
	// The envelope holds 10 values; b1's first copy 8, its second 4.
	resp := `{"id":"r1","seatbid":[{"seat":"old","bid":[{"id":"x","impid":"1","price":1,"ext":[1,2,3]}]}],"SeatBid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}]}`
	rep, _ := probeCheck(t, probeConfig("maxNodes: 12"), probeRequest, resp)
	require.True(t, rep.Passed)
	rep, seen := probeCheck(t, probeConfig("maxNodes: 10"), probeRequest, resp)
	require.Equal(t, []hit{{"b1", "scan limit exceeded", 3, 300}}, hits(rep))
	require.Equal(t, []string{"r1", "old", "x", "1", "s", "b1"}, seen, `"1" of the second copy is b1's value 11`)
}

func TestWalkSeatPolicy(t *testing.T) {
	resp := `{"id":"HIT","seatbid":[{"seat":"a","bid":[{"id":"a1","impid":"1","price":1,"adm":"HIT"}]},` +
		`{"seat":"b","ext":{"x":"HIT"},"bid":[{"id":"b1","impid":"1","price":1},{"id":"b2","impid":"2","price":1,"adm":"HIT"},{"id":"b3","impid":"2","price":1}]}]}`
	cfg := "policy:\n  gates: []\nseats:\n  b:\n    addGates:\n      - gate: probe\n"
	rep, seen := probeCheck(t, cfg, probeRequest, resp)
	// Only seat b's bids: not the response-level values, not seat a's bids.
	require.Equal(t, []hit{{"b2", "hit", 200, 350}}, hits(rep))
	require.Equal(t, []string{"b1", "1", "b2", "2", "HIT", "b3", "2"}, seen)
	// Each of the seat's bids has its own budget: b2 holds 5 values.
	cfg = "policy:\n  gates: []\nseats:\n  b:\n    addGates:\n      - gate: probe\n        options: {maxNodes: 4}\n"
	rep, _ = probeCheck(t, cfg, probeRequest, strings.ReplaceAll(resp, `"adm":"HIT"`, `"adm":"ok"`))
	require.Equal(t, []hit{{"b2", "scan limit exceeded", 3, 300}}, hits(rep))
	// A bid's hit before the limit is reported as itself ("HIT" is b2's
	// value 5, its crid value 6).
	cfg = strings.Replace(cfg, "maxNodes: 4", "maxNodes: 5", 1)
	rep, _ = probeCheck(t, cfg, probeRequest, strings.Replace(resp, `"adm":"HIT"}`, `"adm":"HIT","crid":"c"}`, 2))
	require.Equal(t, []hit{{"b2", "hit", 200, 350}}, hits(rep))
}

func TestWalkSkipsBidsRejectedEarlier(t *testing.T) {
	resp := `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","price":1,"adm":"HIT"},{"id":"b2","impid":"2","price":1}]}]}`
	cfg := "policy:\n  gates:\n    - gate: impidMatch\n    - gate: probe\n"
	rep, seen := probeCheck(t, cfg, probeRequest, resp)
	require.Equal(t, []hit{{"b1", "bid missing impid", 3, 300}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b2", "2"}, seen)
}

func TestNewScanLimit(t *testing.T) {
	_, err := newScanLimit(0, "")
	require.EqualError(t, err, "maxNodes must be > 0")
	_, err = newScanLimit(1, "drop")
	require.EqualError(t, err, "onScanLimit must be fail or pass")
	l, err := newScanLimit(3, "pass")
	require.NoError(t, err)
	require.Equal(t, scanLimit{maxNodes: 3, pass: true}, l)
}

// fakeScope stands in for *engine.Scope in benchmarks and unit tests: every
// bid in scope, response level as set, hits and overruns counted by bid (-1:
// response), the values built on first use.
type fakeScope struct {
	in       *engine.Input
	vals     engine.ScanValues
	built    bool
	seatOnly bool
	bids     []int32
	ticks    int
	hits     int
	reasons  map[int]string
}

func newFakeScope(in *engine.Input) *fakeScope { return &fakeScope{in: in} }

func (s *fakeScope) Values() *engine.ScanValues {
	if !s.built {
		s.vals.Build(s.in)
		s.built = true
	}
	return &s.vals
}
func (s *fakeScope) InScope(int) bool    { return true }
func (s *fakeScope) ResponseLevel() bool { return !s.seatOnly }
func (s *fakeScope) Bids() []int32 {
	if len(s.bids) != len(s.in.Bids) {
		s.bids = s.bids[:0]
		for i := range s.in.Bids {
			s.bids = append(s.bids, int32(i))
		}
	}
	return s.bids
}
func (s *fakeScope) Tick() bool { s.ticks++; return true }
func (s *fakeScope) Hit(i int, v engine.Verdict) bool {
	s.hits++
	if s.reasons != nil {
		if _, ok := s.reasons[i]; !ok {
			s.reasons[i] = v.Reason
		}
	}
	return true
}
func (s *fakeScope) Overrun(i int, v engine.Verdict) { s.Hit(i, v) }

// buildGate builds a gate from its factory with YAML options.
func buildGateEnv(tb testing.TB, f engine.Factory, options string, env engine.Env) (engine.Gate, error) {
	tb.Helper()
	cfg := "policy:\n  gates:\n    - gate: " + f.Name + "\n      options: {" + options + "}\n"
	c, err := config.Parse(filepath.Join(env.Dir, "test.yaml"), []byte(cfg))
	require.NoError(tb, err)
	reg := engine.Registry{f.Name: {Name: f.Name, ResultName: f.ResultName, Kind: f.Kind, Options: f.Options,
		New: func(opts any, e engine.Env) (engine.Gate, error) {
			e.InSeat = env.InSeat
			return f.New(opts, e)
		}}}
	snap, err := engine.Compile(c, filepath.Join(env.Dir, "test.yaml"), []byte(cfg), reg)
	if err != nil {
		return nil, err
	}
	return snap.Default.Gates[0].Gate, nil
}

type nopMatcher struct{}

func (nopMatcher) match([]byte) string { return "" }

// BenchmarkWalk is the scan floor on the typical pair: the response walked
// into its values (once per request) and one scan of them with a matcher that
// never hits.
func BenchmarkWalk(b *testing.B) {
	ev := typicalEval(b)
	sc := newFakeScope(&ev.In)
	b.ReportAllocs()
	for b.Loop() {
		sc.built = false
		scanResponse(sc, nopMatcher{}, scanLimit{maxNodes: defaultMaxNodes})
	}
}

// BenchmarkScanOnce is what the scanning gates filesystem, pii and content
// cost together on the typical pair: one walk, three scans of its values.
func BenchmarkScanOnce(b *testing.B) {
	ev := typicalEval(b)
	lim := scanLimit{maxNodes: defaultMaxNodes}
	gs := []typicalScanner{
		&filesystem{rm: true, traversal: true, sensitive: true, limit: lim},
		&pii{email: true, ssn: true, phone: true, limit: lim},
		&content{refusals: true, phrases: newPhraseSet(refusalPhrases), limit: lim},
	}
	sc := newFakeScope(&ev.In)
	b.ReportAllocs()
	for b.Loop() {
		sc.built = false
		for _, g := range gs {
			g.scan(&ev.In, sc)
		}
	}
	if sc.hits != 0 {
		b.Fatal("the typical pair must pass")
	}
}

// TestScanGatesAreSafeForConcurrentUse runs one instance of each scanning
// gate from several goroutines at once (meaningful under -race).
func TestScanGatesAreSafeForConcurrentUse(t *testing.T) {
	sch, _, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	type scanner interface {
		scan(in *engine.Input, sc scanScope)
	}
	gates := []scanner{
		&pii{email: true, ssn: true, phone: true, limit: scanLimit{maxNodes: defaultMaxNodes}},
		&filesystem{rm: true, traversal: true, sensitive: true, limit: scanLimit{maxNodes: defaultMaxNodes}},
		&content{checkEmpty: true, refusals: true, phrases: newPhraseSet(refusalPhrases), limit: scanLimit{maxNodes: defaultMaxNodes}},
		sch,
	}
	resp := []byte(`{"id":"r","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"crid":"c","adm":"rm -rf /etc a@b.co I can\u2019t help"},{"id":"b2","impid":"1","price":1,"crid":"c","nurl":"x"}]}]}`)
	done := make(chan [4]int)
	for range 4 {
		go func() {
			var n [4]int
			ev := engine.AcquireEval()
			defer engine.ReleaseEval(ev)
			if ev.DecodeResponse(resp, 1000) != nil {
				done <- n
				return
			}
			for range 50 {
				for k, g := range gates {
					sc := newFakeScope(&ev.In)
					g.scan(&ev.In, sc)
					n[k] += sc.hits
				}
			}
			done <- n
		}()
	}
	for range 4 {
		// pii, filesystem and content each reject b1; schema passes.
		require.Equal(t, [4]int{50, 50, 50, 0}, <-done)
	}
}

// typicalScanner is a scanning gate's scan, for the shared typical-pair
// test and benchmark of filesystem, pii and content.
type typicalScanner interface {
	scan(in *engine.Input, sc scanScope)
}

// requireScanPassesTypical asserts the typical pair holds no hit for g.
func requireScanPassesTypical(t *testing.T, g typicalScanner) {
	t.Helper()
	ev := typicalEval(t)
	sc := newFakeScope(&ev.In)
	g.scan(&ev.In, sc)
	require.Zero(t, sc.hits)
}

// benchScanTypical measures g's scan of the typical pair, its values walked
// once beforehand: what the gate adds to a request's scanning.
func benchScanTypical(b *testing.B, g typicalScanner) {
	ev := typicalEval(b)
	sc := newFakeScope(&ev.In)
	b.ReportAllocs()
	for b.Loop() {
		g.scan(&ev.In, sc)
	}
	if sc.hits != 0 {
		b.Fatal("the typical pair must pass")
	}
}

// boundedRecorder records the strings scanResponse passes it; it declares
// that no string shorter than min can hit.
type boundedRecorder struct {
	min  int
	seen []string
}

func (r *boundedRecorder) match(s []byte) string {
	r.seen = append(r.seen, string(s))
	return ""
}

func (r *boundedRecorder) minLen() int { return r.min }

func TestWalkPassesOnlyStringsAsLongAsTheBound(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	all := &boundedRecorder{}
	scanResponse(newFakeScope(&ev.In), all, scanLimit{maxNodes: defaultMaxNodes})
	r := &boundedRecorder{min: 13}
	scanResponse(newFakeScope(&ev.In), r, scanLimit{maxNodes: defaultMaxNodes})
	var want []string
	for _, s := range all.seen {
		if len(s) >= 13 {
			want = append(want, s)
		}
	}
	require.Equal(t, want, r.seen)
	require.Contains(t, r.seen, "req-typical-1") // 13 bytes: passed
	require.Less(t, len(r.seen), len(all.seen))
}
