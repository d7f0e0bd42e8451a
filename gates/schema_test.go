package gates

import (
	"path/filepath"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

var schemaDir = filepath.Join("testdata", "schema")

func buildSchema(t testing.TB, options string, inSeat bool) (*schema, []string, error) {
	t.Helper()
	var watched []string
	g, err := buildGateEnv(t, schemaFactory, options, engine.Env{Dir: schemaDir, InSeat: inSeat})
	if err != nil {
		return nil, nil, err
	}
	// buildGate compiles through the engine; compile once more to see what
	// the gate watches.
	o := &schemaOptions{Target: schemaTargetOutput}
	o.File = filepath.Join("schemas", "response.json")
	_, werr := schemaFactory.New(o, engine.Env{Dir: schemaDir, Watch: func(p string) { watched = append(watched, p) }})
	require.NoError(t, werr)
	return g.(*schema), watched, nil
}

func TestSchemaOptions(t *testing.T) {
	_, watched, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	abs, _ := filepath.Abs(schemaDir)
	require.Equal(t, []string{filepath.Join(abs, "schemas", "response.json"), filepath.Join(abs, "schemas", "bid.json")}, watched)

	f := func(options string, inSeat bool, wantErr string) {
		t.Helper()
		_, _, err := buildSchema(t, options, inSeat)
		require.ErrorContains(t, err, wantErr, options)
	}
	f("", false, "file is required")
	f("file: schemas/response.json, target: both", false, "target must be output or input")
	f("file: schemas/request.json, target: input", true, "target: input is not allowed in a seat policy")
	f("file: schemas/missing.json", false, "file: ")
	f("file: schemas/remote-ref.json", false, "never fetched over the network")
	f("file: schemas/remote-meta.json", false, "never fetched over the network")
	// Without $schema the draft is 2020-12, where prefixItems is an array.
	f("file: schemas/no-draft.json", false, "prefixItems")

	g, _, err := buildSchema(t, "file: schemas/request.json, target: input", false)
	require.NoError(t, err)
	require.True(t, g.input)
	_, _, err = buildSchema(t, "file: schemas/response.json", true)
	require.NoError(t, err)
}

func TestSchemaAttribution(t *testing.T) {
	g, _, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	resp := `{"id":"r1","cur":"usd","seatbid":[` +
		`{"seat":"a","bid":[{"id":"a1","impid":"1","price":1,"crid":"c","adm":"x"},{"id":"a2","impid":"1","price":0,"adm":"x"}]},` +
		`{"seat":"b","bid":[{"id":"b1","impid":"1","price":1,"crid":"c","adm":"x","adomain":["a","b","x","y","z","v"],"w":-1,"ext":{"line":"7"}}]}]}`
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	require.NoError(t, ev.DecodeResponse([]byte(resp), 1000))
	sc := &verdictScope{}
	g.scan(&ev.In, sc)
	require.Len(t, sc.hits, 3)
	// Response level: the currency.
	require.Equal(t, -1, sc.hits[0].bid)
	require.Equal(t, "schema validation failed (1 issue): cur: 'usd' does not match pattern '^[A-Z]{3}$'", sc.hits[0].v.Reason)
	require.Equal(t, []int{3, 300}, []int{sc.hits[0].v.Loss, sc.hits[0].v.NBR})
	// seatbid.0.bid.1: its own two issues.
	require.Equal(t, 1, sc.hits[1].bid)
	require.Equal(t, "schema validation failed (2 issues): seatbid.0.bid.1: missing property 'crid'", sc.hits[1].v.Reason)
	require.Equal(t, []int{200, 350}, []int{sc.hits[1].v.Loss, sc.hits[1].v.NBR})
	require.Equal(t, schemaDetails{Total: 2, Issues: []schemaIssue{
		{Path: "seatbid.0.bid.1", Message: "missing property 'crid'"},
		{Path: "seatbid.0.bid.1.price", Message: "exclusiveMinimum: got 0, want 0"},
	}}, sc.hits[1].v.Details)
	// seatbid.1.bid.0 is bid 2: 4 issues, 5 listed at most.
	require.Equal(t, 2, sc.hits[2].bid)
	d := sc.hits[2].v.Details.(schemaDetails)
	require.Equal(t, 3, d.Total)
	require.Equal(t, []schemaIssue{
		{Path: "seatbid.1.bid.0.adomain", Message: "maxItems: got 6, want 5"},
		{Path: "seatbid.1.bid.0.ext.line", Message: "got string, want integer"},
		{Path: "seatbid.1.bid.0.w", Message: "minimum: got -1, want 0"},
	}, d.Issues)

	// A seat policy sees only its bids' issues.
	sc = &verdictScope{seatOnly: true}
	g.scan(&ev.In, sc)
	require.Len(t, sc.hits, 2)
	require.Equal(t, []int{1, 2}, []int{sc.hits[0].bid, sc.hits[1].bid})
}

func TestSchemaIssueCap(t *testing.T) {
	g, _, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	require.NoError(t, ev.DecodeResponse([]byte(`{"id":"r1","seatbid":[{"bid":[{"id":"","impid":"","price":0,"crid":"","w":-1,"h":-1,"ext":{"line":1.5}}]}]}`), 1000))
	sc := &verdictScope{}
	g.scan(&ev.In, sc)
	require.Len(t, sc.hits, 1)
	d := sc.hits[0].v.Details.(schemaDetails)
	// id, impid, crid, price, w, h, ext.line and both branches of anyOf.
	require.Equal(t, 9, d.Total)
	require.Len(t, d.Issues, 5)
	require.Equal(t, "schema validation failed (9 issues): seatbid.0.bid.0: missing property 'adm'", sc.hits[0].v.Reason)
	require.Equal(t, schemaIssue{Path: "seatbid.0.bid.0.crid", Message: "minLength: got 0, want 1"}, d.Issues[2])
}

func TestSchemaInputTarget(t *testing.T) {
	g, _, err := buildSchema(t, "file: schemas/request.json, target: input", false)
	require.NoError(t, err)
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	require.NoError(t, ev.DecodeRequest([]byte(`{"id":"r1","imp":[{"id":"1"}]}`)))
	require.NoError(t, ev.DecodeResponse([]byte(`{"id":"r1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":1}]}]}`), 1000))
	sc := &verdictScope{}
	g.scan(&ev.In, sc)
	require.Len(t, sc.hits, 1)
	require.Equal(t, -1, sc.hits[0].bid)
	require.Equal(t, "schema validation failed (1 issue): (root): missing property 'tmax'", sc.hits[0].v.Reason)
}

func TestSchemaPath(t *testing.T) {
	require.Equal(t, "(root)", schemaPath(nil))
	require.Equal(t, "seatbid.0.bid.0.price", schemaPath([]string{"seatbid", "0", "bid", "0", "price"}))
	require.Equal(t, "a.b\u00e9?c", schemaPath([]string{"a", "b\u00e9\nc"}))
}

// verdictScope records every hit with its verdict.
type verdictScope struct {
	seatOnly bool
	hits     []struct {
		bid int
		v   engine.Verdict
	}
}

// Values is never called: schema validates the raw document itself.
func (s *verdictScope) Values() *engine.ScanValues      { return nil }
func (s *verdictScope) Overrun(i int, v engine.Verdict) { s.Hit(i, v) }
func (s *verdictScope) InScope(int) bool                { return true }
func (s *verdictScope) ResponseLevel() bool             { return !s.seatOnly }
func (s *verdictScope) Tick() bool                      { return true }
func (s *verdictScope) Bids() []int32                   { return nil }
func (s *verdictScope) Hit(i int, v engine.Verdict) bool {
	s.hits = append(s.hits, struct {
		bid int
		v   engine.Verdict
	}{i, v})
	return true
}

func TestSchemaTypicalPairPasses(t *testing.T) {
	g, _, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	ev := typicalEval(t)
	sc := &verdictScope{}
	g.scan(&ev.In, sc)
	require.Empty(t, sc.hits)
}

func BenchmarkSchema(b *testing.B) {
	g, _, err := buildSchema(b, "file: schemas/response.json", false)
	require.NoError(b, err)
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

// The schema reads the document as written; the decoder, like
// encoding/json, takes the last of keys that differ only in case. An issue
// at a bid the decoded response does not hold (seatbid.0.bid.1 where the
// decoded seatbid 0 has one bid) is response-level: never the next seat's
// bid, which is valid.
func TestSchemaAttributionPastTheDecodedBids(t *testing.T) {
	g, _, err := buildSchema(t, "file: schemas/response.json", false)
	require.NoError(t, err)
	resp := `{"id":"r1","seatbid":[{"seat":"a","bid":[{"id":"a1","impid":"1","price":1,"crid":"c","adm":"x"},{"id":"a2","impid":"1","price":0,"crid":"c","adm":"x"}]}],` +
		`"SeatBid":[{"seat":"c","bid":[{"id":"c1","impid":"1","price":1,"crid":"c","adm":"x"}]},{"seat":"d","bid":[{"id":"d1","impid":"1","price":1,"crid":"c","adm":"x"}]}]}`
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	require.NoError(t, ev.DecodeResponse([]byte(resp), 1000))
	require.Len(t, ev.In.Bids, 2)
	sc := &verdictScope{}
	g.scan(&ev.In, sc)
	require.Len(t, sc.hits, 1)
	require.Equal(t, -1, sc.hits[0].bid)
	require.Equal(t, "schema validation failed (1 issue): seatbid.0.bid.1.price: exclusiveMinimum: got 0, want 0", sc.hits[0].v.Reason)
}
