package gates

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// scanSegmentRef is scanSegment as it was before SegmentStrings.Skip: every
// string's Size read and compared in turn. It is the reference the
// differential tests hold scanSegment to.
func scanSegmentRef(sc scanScope, vals *engine.ScanValues, seg *engine.ScanSegment, m stringMatcher, short int, lim scanLimit) (hit, stop bool) {
	strs := vals.StringsOf(seg)
	for j := range strs.Len() {
		if strs.Size(j) < short {
			continue
		}
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

// recScope records what a segment scan reports; Hit answers keep.
type recScope struct {
	vals *engine.ScanValues
	keep bool
	log  *[]string
}

func (s recScope) Values() *engine.ScanValues { return s.vals }
func (s recScope) InScope(int) bool           { return true }
func (s recScope) ResponseLevel() bool        { return true }
func (s recScope) Bids() []int32              { return nil }
func (s recScope) Tick() bool                 { return true }
func (s recScope) Hit(i int, v engine.Verdict) bool {
	*s.log = append(*s.log, fmt.Sprintf("hit %d %q %d %d", i, v.Reason, v.Loss, v.NBR))
	return s.keep
}
func (s recScope) Overrun(i int, v engine.Verdict) {
	*s.log = append(*s.log, fmt.Sprintf("overrun %d %q %d %d", i, v.Reason, v.Loss, v.NBR))
}

// recMatcher records every string it is passed and hits those hit picks.
type recMatcher struct {
	hit func(s []byte) bool
	log *[]string
}

func (m recMatcher) match(s []byte) string {
	*m.log = append(*m.log, "match "+string(s))
	if m.hit(s) {
		return "r:" + string(s)
	}
	return ""
}

// segmentMatchers are the hit rules the differential check runs: none, a
// byte, a length class.
var segmentMatchers = []func(s []byte) bool{
	func([]byte) bool { return false },
	func(s []byte) bool { return strings.ContainsAny(string(s), "xe") },
	func(s []byte) bool { return len(s)%3 == 1 },
}

// checkScanSegmentDifferential decodes doc as a response and, for every
// segment, short bound, budget, scan-limit mode, hit rule and Hit answer,
// compares scanSegment with scanSegmentRef: the strings passed to the
// matcher in order, what is reported, and the results. Without full, fewer
// bounds and budgets.
func checkScanSegmentDifferential(t *testing.T, doc []byte, full bool) {
	t.Helper()
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	if ev.DecodeResponse(doc, 1000) != nil || ev.Info().TooManyBids {
		return
	}
	var vals engine.ScanValues
	vals.Build(&ev.In)
	maxLen := 0
	for si := range vals.Segments() {
		ss := vals.StringsOf(&vals.Segments()[si])
		for j := range ss.Len() {
			maxLen = max(maxLen, ss.Size(j))
		}
	}
	shorts := []int{0, minEmailLen, minSSNLen, maxLen + 1}
	if full {
		shorts = []int{0, 1, 2, 3, 5, 6, 7, 11, 20, maxLen, maxLen + 1}
	}
	var got, want []string
	for si := range vals.Segments() {
		seg := &vals.Segments()[si]
		// Budgets that end before the segment, in it and after it.
		budgets := []int{seg.Before + seg.Nodes/2 + 1, defaultMaxNodes}
		if full {
			budgets = []int{1, seg.Before + 1, seg.Before + 2, seg.Before + seg.Nodes/2, seg.Before + seg.Nodes - 1,
				seg.Before + seg.Nodes, seg.Before + seg.Nodes + 1, defaultMaxNodes}
		}
		for _, short := range shorts {
			for _, maxNodes := range budgets {
				for _, hit := range segmentMatchers {
					for _, pass := range []bool{false, true} {
						for _, keep := range []bool{true, false} {
							lim := scanLimit{maxNodes: maxNodes, pass: pass}
							got, want = got[:0], want[:0]
							gh, gs := scanSegment(recScope{&vals, keep, &got}, &vals, seg, recMatcher{hit, &got}, short, lim)
							wh, ws := scanSegmentRef(recScope{&vals, keep, &want}, &vals, seg, recMatcher{hit, &want}, short, lim)
							if gh != wh || gs != ws || !slices.Equal(got, want) {
								t.Fatalf("%s\nsegment %d (bid %d), short %d, %+v, keep %v:\ngot %v %v %q\nwant %v %v %q",
									doc, si, seg.Bid, short, lim, keep, gh, gs, got, wh, ws, want)
							}
						}
					}
				}
			}
		}
	}
}

// scanSegmentDocs returns the responses of the gates' test cases, of the
// corpus, and the typical one.
func scanSegmentDocs(tb testing.TB) [][]byte {
	tb.Helper()
	var docs [][]byte
	cases, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	require.NoError(tb, err)
	for _, p := range cases {
		b, err := os.ReadFile(p)
		require.NoError(tb, err)
		if strings.HasSuffix(p, "-response.json") {
			docs = append(docs, b)
			continue
		}
		var c struct {
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(b, &c) == nil && len(c.Response) > 0 {
			docs = append(docs, c.Response)
		}
	}
	resp, err := os.ReadFile(filepath.Join("testdata", "typical-response.json"))
	require.NoError(tb, err)
	return append(docs, resp)
}

func TestScanSegmentMatchesTheReference(t *testing.T) {
	docs := scanSegmentDocs(t)
	require.Greater(t, len(docs), 50)
	for _, doc := range docs {
		checkScanSegmentDifferential(t, doc, false)
	}
	// Strings the decoder decoded, escaped ones, invalid UTF-8, shadowed
	// bids, strings that are bids by themselves.
	for _, doc := range []string{
		`{"id":"r\u0031","seatbid":[{"seat":"s\n","bid":[{"id":"b1","impid":"1","price":1,"adm":"xe\u0041 long string"},"lone","x"],"zz":"eeeeeee"}],"cur":"USD"}`,
		"{\"seatbid\":[{\"bid\":[{\"id\":\"\xff\xfex\",\"impid\":\"1\",\"price\":1,\"ext\":{\"a\":[\"xx\",\"eee\",\"abcdefgh\"]}}]}],\"ext\":\"\xc3\"}",
		`{"seatbid":[{"bid":[{"id":"a","impid":"1","price":1,"adm":"x"}]}],"SeatBid":[{"bid":[{"id":"a","impid":"1","price":1,"nurl":"http://e.example/x"}]}]}`,
	} {
		checkScanSegmentDifferential(t, []byte(doc), true)
	}
	checkScanSegmentDifferential(t, docs[len(docs)-1], true) // the typical one
}

// FuzzScanSegmentDifferential holds scanSegment to scanSegmentRef on every
// response the decoder accepts.
func FuzzScanSegmentDifferential(f *testing.F) {
	for _, doc := range scanSegmentDocs(f) {
		if len(doc) <= 4<<10 {
			f.Add(doc)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 1<<14 {
			return
		}
		checkScanSegmentDifferential(t, doc, true)
	})
}
