package gates

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

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

func (p *probe) Scan(in *engine.Input, sc *engine.Scope) { scanResponse(in, sc, p, p.limit) }

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
	cfg, err := engine.ParseConfig("test.yaml", []byte(config))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(config), reg)
	require.NoError(t, err)
	rep, ev, err := engine.Check(snap, []byte(request), []byte(response), engine.CheckOptions{LatencyMs: -1})
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

func hits(rep *engine.Report) []hit {
	var out []hit
	for _, h := range rep.Rejected {
		out = append(out, hit{h.BidID, h.Reason, h.Loss, h.NBR})
	}
	return out
}

func TestWalkVisitsValuesInDocumentOrder(t *testing.T) {
	resp := `{"id":"r1","ext":{"k":"v\u0041\n","n":[1,true,null,"x\"y"]},` +
		`"seatbid":[{"seat":"s1","ext":{"e":"se"},"bid":[{"id":"b1","impid":"1","price":1,"adm":"a\/b"}]},` +
		`{"bid":[{"id":"b2","impid":"2","price":2}],"seat":"s2"}],"cur":"USD"}`
	rep, seen := probeCheck(t, probeConfig(""), probeRequest, resp)
	require.True(t, rep.Passed)
	require.Equal(t, []string{"r1", "vA\n", `x"y`, "s1", "se", "b1", "1", "a/b", "s2", "b2", "2", "USD"}, seen)
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
	// Top-level, seat, seatbid ext: the response, 3 / 300.
	f(`{"id":"HIT","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}]}`, false, []hit{{"", "hit", 3, 300}})
	f(`{"id":"r1","seatbid":[{"seat":"HIT","bid":[{"id":"b1","impid":"1","price":1}]}]}`, false, []hit{{"", "hit", 3, 300}})
	f(`{"id":"r1","seatbid":[{"seat":"s","ext":{"a":"HIT"},"bid":[{"id":"b1","impid":"1","price":1}]}]}`, false, []hit{{"", "hit", 3, 300}})
	// Keys are not scanned.
	f(`{"id":"r1","ext":{"HIT":1},"seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"ext":{"HIT":"ok"}}]}]}`, true, nil)
	// Escapes are decoded before matching.
	f(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"adm":"\u0048IT"}]}]}`, false, []hit{{"b1", "hit", 200, 350}})
	// Both: one response entry, one per bid.
	f(`{"id":"r1","cur":"HIT","seatbid":[{"seat":"s","bid":[{"id":"HIT","impid":"1","price":1},{"id":"b2","impid":"HIT","price":1}]}]}`,
		false, []hit{{"HIT", "hit", 200, 350}, {"b2", "hit", 200, 350}, {"", "hit", 3, 300}})
}

func TestWalkStopsAtFirstHitOfABid(t *testing.T) {
	resp := `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"adm":"HIT","crid":"HIT2"},{"id":"b2","impid":"2","price":1}]}]}`
	rep, seen := probeCheck(t, probeConfig(""), probeRequest, resp)
	require.Equal(t, []hit{{"b1", "hit", 200, 350}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b1", "1", "HIT", "b2", "2"}, seen)
}

func TestWalkSkipsDuplicateSeatbidKeys(t *testing.T) {
	// encoding/json decodes the last case-insensitive "seatbid" key; the
	// walker walks the decoded seatbids once, at the first such key.
	resp := `{"id":"r1","seatbid":[{"seat":"old","bid":[{"id":"x","impid":"1","price":1}]}],"SeatBid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}],"cur":"USD"}`
	_, seen := probeCheck(t, probeConfig(""), probeRequest, resp)
	require.Equal(t, []string{"r1", "s", "b1", "1", "USD"}, seen)
}

// scanLimitResp has 11 values: the object, "r1", the seatbid array, the
// seatbid, "s", the bid array, the bid, "b1", "1", 1 and "USD".
const scanLimitResp = `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}],"cur":"USD"}`

func TestWalkScanLimit(t *testing.T) {
	rep, _ := probeCheck(t, probeConfig("maxNodes: 11"), probeRequest, scanLimitResp)
	require.True(t, rep.Passed)
	rep, seen := probeCheck(t, probeConfig("maxNodes: 10"), probeRequest, scanLimitResp)
	require.Equal(t, []hit{{"", "scan limit exceeded", 3, 300}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b1", "1"}, seen)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 10, onScanLimit: pass"), probeRequest, scanLimitResp)
	require.True(t, rep.Passed)
	// A hit found before the limit counts either way. The rest of a bid
	// after its hit is not visited, so not counted: "HIT" is value 8, "USD" 9.
	withHit := strings.Replace(scanLimitResp, `"b1"`, `"HIT"`, 1)
	rep, _ = probeCheck(t, probeConfig("maxNodes: 8, onScanLimit: pass"), probeRequest, withHit)
	require.Equal(t, []hit{{"HIT", "hit", 200, 350}}, hits(rep))
	rep, _ = probeCheck(t, "policy:\n  failFast: false\n  gates:\n    - gate: probe\n      options: {maxNodes: 9}\n", probeRequest, withHit)
	require.Equal(t, []hit{{"HIT", "hit", 200, 350}}, hits(rep))
	rep, _ = probeCheck(t, "policy:\n  failFast: false\n  gates:\n    - gate: probe\n      options: {maxNodes: 8}\n", probeRequest, withHit)
	require.Equal(t, []hit{{"HIT", "hit", 200, 350}, {"", "scan limit exceeded", 3, 300}}, hits(rep))
}

func TestWalkSeatPolicy(t *testing.T) {
	resp := `{"id":"HIT","seatbid":[{"seat":"a","bid":[{"id":"a1","impid":"1","price":1,"adm":"HIT"}]},` +
		`{"seat":"b","ext":{"x":"HIT"},"bid":[{"id":"b1","impid":"1","price":1},{"id":"b2","impid":"2","price":1,"adm":"HIT"},{"id":"b3","impid":"2","price":1}]}]}`
	cfg := "policy:\n  gates: []\nseats:\n  b:\n    addGates:\n      - gate: probe\n"
	rep, seen := probeCheck(t, cfg, probeRequest, resp)
	// Only seat b's bids: not the response-level values, not seat a's bids.
	require.Equal(t, []hit{{"b2", "hit", 200, 350}}, hits(rep))
	require.Equal(t, []string{"b1", "1", "b2", "2", "HIT", "b3", "2"}, seen)
	// The limit rejects each of the seat's bids not fully scanned (3 values per bid here).
	cfg = "policy:\n  gates: []\nseats:\n  b:\n    addGates:\n      - gate: probe\n        options: {maxNodes: 5}\n"
	rep, _ = probeCheck(t, cfg, probeRequest, strings.ReplaceAll(resp, `"adm":"HIT"`, `"adm":"ok"`))
	require.Equal(t, []hit{{"b2", "scan limit exceeded", 3, 300}, {"b3", "scan limit exceeded", 3, 300}}, hits(rep))
}

func TestWalkSkipsBidsRejectedEarlier(t *testing.T) {
	resp := `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","price":1,"adm":"HIT"},{"id":"b2","impid":"2","price":1}]}]}`
	cfg := "policy:\n  gates:\n    - gate: impidMatch\n    - gate: probe\n"
	rep, seen := probeCheck(t, cfg, probeRequest, resp)
	require.Equal(t, []hit{{"b1", "bid missing impid", 3, 300}}, hits(rep))
	require.Equal(t, []string{"r1", "s", "b2", "2"}, seen)
}

func TestUnescape(t *testing.T) {
	w := &walker{}
	f := func(body, want string) {
		t.Helper()
		end, esc := stringEnd([]byte(`"`+body+`"`), 1)
		require.Equal(t, len(body)+1, end, body)
		require.Equal(t, strings.Contains(body, `\`), esc, body)
		require.Equal(t, want, string(w.unescape([]byte(body))), body)
	}
	f(`plain`, "plain")
	f(`a\"b`, `a"b`)
	f(`a\\`, `a\`)
	f(`\\\"`, `\"`)
	f(`\/\b\f\n\r\t`, "/\b\f\n\r\t")
	f(`\u00e9\u20AC`, "é€")
	f(`\ud83d\ude00`, "😀")
	f(`\ud800x`, "\uFFFDx")
	f(`\udc00`, "\uFFFD")
	f(`\ud83d\u0041`, "\uFFFDA")
	f(`it\u2019s`, "it’s")
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
// bid in scope, response level as set, hits counted by bid (-1: response).
type fakeScope struct {
	seatOnly bool
	hits     int
	reasons  map[int]string
}

func (s *fakeScope) InScope(int) bool    { return true }
func (s *fakeScope) ResponseLevel() bool { return !s.seatOnly }
func (s *fakeScope) Tick() bool          { return true }
func (s *fakeScope) Hit(i int, v engine.Verdict) bool {
	s.hits++
	if s.reasons != nil {
		if _, ok := s.reasons[i]; !ok {
			s.reasons[i] = v.Reason
		}
	}
	return true
}

// buildGate builds a gate from its factory with YAML options.
func buildGateEnv(tb testing.TB, f engine.Factory, options string, env engine.Env) (engine.Gate, error) {
	tb.Helper()
	cfg := "policy:\n  gates:\n    - gate: " + f.Name + "\n      options: {" + options + "}\n"
	c, err := engine.ParseConfig(filepath.Join(env.Dir, "test.yaml"), []byte(cfg))
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

// BenchmarkWalk is the walker alone on the typical pair: the floor under
// every scanning gate but schema.
func BenchmarkWalk(b *testing.B) {
	ev := typicalEval(b)
	sc := &fakeScope{}
	b.ReportAllocs()
	for b.Loop() {
		scanResponse(&ev.In, sc, nopMatcher{}, scanLimit{maxNodes: defaultMaxNodes})
	}
}

func TestSkipSeatbidFindsTheValueEnd(t *testing.T) {
	for _, resp := range []string{
		`{"seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"adm":"}]\"{"}]}],"id":"x"}`,
		`{"seatbid" : [ { "bid" : [ {"id":"b1","impid":"1","price":1} , {"id":"b2","impid":"1","price":2} ] , "seat":"a]" } ] , "id":"x"}`,
		`{"seatbid":null,"id":"x"}`,
		`{"seatbid":[],"id":"x"}`,
		`{"seatbid":[{"bid":[{"id":"b1","impid":"1","price":1}]}],"seatbid":[{"bid":[{"id":"b2","impid":"1","price":1}]}],"id":"x"}`,
	} {
		ev := engine.AcquireEval()
		require.NoError(t, ev.DecodeResponse([]byte(resp), 1000), resp)
		w := &walker{in: &ev.In, max: defaultMaxNodes}
		raw := []byte(resp)
		start := skipSpace(raw, bytes.IndexByte(raw, ':')+1)
		want, _ := w.value(raw, start, modeSkip, false)
		require.Equal(t, want, w.skipSeatbid(raw, start), resp)
		require.True(t, strings.HasPrefix(strings.TrimLeft(string(raw[want:]), " "), ","), resp)
		engine.ReleaseEval(ev)
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
					sc := &fakeScope{}
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
	sc := &fakeScope{}
	g.scan(&ev.In, sc)
	require.Zero(t, sc.hits)
}

// benchScanTypical measures g's scan of the typical pair.
func benchScanTypical(b *testing.B, g typicalScanner) {
	ev := typicalEval(b)
	sc := &fakeScope{}
	b.ReportAllocs()
	for b.Loop() {
		g.scan(&ev.In, sc)
	}
	if sc.hits != 0 {
		b.Fatal("the typical pair must pass")
	}
}
