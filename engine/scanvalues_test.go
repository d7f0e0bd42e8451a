package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// scanValue is one value as a table of scanned values describes it: the bid
// it lies in (-1: the response), its position in its segment, and the decoded
// string (strings only).
type scanValue struct {
	Bid  int
	Node int
	Str  string
	IsS  bool
}

// tableValues lists the strings of v with their segment's owner and
// position, and the segments as (owner, values).
func tableValues(v *engine.ScanValues) (strs []scanValue, segs [][2]int) {
	for i := range v.Segments() {
		seg := &v.Segments()[i]
		segs = append(segs, [2]int{seg.Bid, seg.Nodes})
		// The per-segment view the scanning gates read must agree with
		// String on every string; a mismatch shows as an extra value.
		ss := v.StringsOf(seg)
		if ss.Len() != seg.Strings() {
			strs = append(strs, scanValue{Bid: seg.Bid, Str: "SegmentStrings.Len differs"})
		}
		for j := range seg.Strings() {
			s, node := v.String(seg, j)
			if s2, node2 := ss.At(j); string(s2) != string(s) || node2 != node || ss.Size(j) != len(s) {
				strs = append(strs, scanValue{Bid: seg.Bid, Node: node, Str: "SegmentStrings.At/Size differ"})
			}
			strs = append(strs, scanValue{Bid: seg.Bid, Node: node, Str: string(s), IsS: true})
		}
		if !skipAgrees(&ss) {
			strs = append(strs, scanValue{Bid: seg.Bid, Str: "SegmentStrings.Skip differs"})
		}
	}
	return strs, segs
}

// skipAgrees tells whether Skip(i, n) is, for every start i and bound n,
// the first index from i whose Size is n or more, or Len.
func skipAgrees(ss *engine.SegmentStrings) bool {
	longest := 0
	for j := range ss.Len() {
		longest = max(longest, ss.Size(j))
	}
	for n := 0; n <= longest+1; n++ {
		for i := 0; i <= ss.Len(); i++ {
			want := i
			for want < ss.Len() && ss.Size(want) < n {
				want++
			}
			if ss.Skip(i, n) != want {
				return false
			}
		}
	}
	return true
}

// refValues is an independent reading of the rule, over encoding/json's
// token stream: every value in document order, keys left out, a value at
// seatbid[i].bid[j] or below (keys compared with strings.EqualFold) owned by
// the decoded bid at that place.
func refValues(t *testing.T, doc []byte, bids []engine.Bid) (strs []scanValue, segs [][2]int) {
	t.Helper()
	type frame struct {
		obj      bool
		expectKy bool
		key      string
		next     int
	}
	var stack []frame
	// path of the current value: keys and indexes from the root
	owner := func() int {
		if len(stack) < 4 || !stack[0].obj || !strings.EqualFold(stack[0].key, "seatbid") ||
			stack[1].obj || !stack[2].obj || !strings.EqualFold(stack[2].key, "bid") || stack[3].obj {
			return -1
		}
		i, j := stack[1].next-1, stack[3].next-1
		for k := range bids {
			if bids[k].SeatIndex == i && bids[k].BidIndex == j {
				return k
			}
		}
		return -1
	}
	add := func(bid int, isStr bool, s string) {
		if len(segs) == 0 || segs[len(segs)-1][0] != bid {
			segs = append(segs, [2]int{bid, 0})
		}
		segs[len(segs)-1][1]++
		if isStr {
			strs = append(strs, scanValue{Bid: bid, Node: segs[len(segs)-1][1], Str: s, IsS: true})
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return strs, segs
		}
		require.NoError(t, err)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			if top.obj && top.expectKy {
				top.key, top.expectKy = tok.(string), false
				continue
			}
			if top.obj {
				top.expectKy = true
			} else {
				top.next++
			}
		}
		s, isStr := tok.(string)
		add(owner(), isStr, s)
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{obj: d == '{', expectKy: d == '{'})
		}
	}
}

// checkScanValues builds the table of doc, when it decodes, and compares it
// with the reference reading.
func checkScanValues(t *testing.T, doc []byte) {
	t.Helper()
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	if ev.DecodeResponse(doc, 1000) != nil || len(bytes.TrimSpace(doc)) == 0 || ev.Info().TooManyBids {
		return
	}
	var v engine.ScanValues
	v.Build(&ev.In)
	gotS, gotSeg := tableValues(&v)
	wantS, wantSeg := refValues(t, doc, ev.In.Bids)
	require.Equal(t, wantSeg, gotSeg, "%s", doc)
	require.Equal(t, wantS, gotS, "%s", doc)
	requireBudgets(t, &v)
	// Built again into the same storage, the table is the same.
	v.Build(&ev.In)
	againS, againSeg := tableValues(&v)
	require.Equal(t, gotSeg, againSeg)
	require.Equal(t, gotS, againS)
	// From the bytes alone (no tokens of the validating pass, nothing known
	// of its UTF-8), the same table.
	v.Build(&engine.Input{RawResponse: ev.In.RawResponse, Bids: ev.In.Bids})
	bytesS, bytesSeg := tableValues(&v)
	require.Equal(t, gotSeg, bytesSeg)
	require.Equal(t, gotS, bytesS)
	requireBudgets(t, &v)
}

// requireBudgets checks that each segment starts its bid's (the envelope's)
// scan budget where that owner's earlier segments end, and that a bid's
// segments chain from FirstSegment in document order.
func requireBudgets(t *testing.T, v *engine.ScanValues) {
	t.Helper()
	count := map[int]int{}
	of := map[int][]int{}
	for si, seg := range v.Segments() {
		require.Equal(t, count[seg.Bid], seg.Before, "segment of bid %d", seg.Bid)
		count[seg.Bid] += seg.Nodes
		if seg.Bid >= 0 {
			of[seg.Bid] = append(of[seg.Bid], si)
		}
	}
	for bid, want := range of {
		var got []int
		for si := v.FirstSegment(bid); si >= 0; si = v.Segments()[si].Next {
			got = append(got, si)
		}
		require.Equal(t, want, got, "segments of bid %d", bid)
	}
	require.Equal(t, -1, v.FirstSegment(-1))
}

var scanValuesSeeds = []string{
	`{"id":"r1","ext":{"k":"v\u0041\n","n":[1,true,null,"x\"y"]},"seatbid":[{"seat":"s1","ext":{"e":"se"},"bid":[{"id":"b1","impid":"1","price":1,"adm":"a\/b"}]},{"bid":[{"id":"b2","impid":"2","price":2}],"seat":"s2","zz":["z"]}],"cur":"USD"}`,
	`{"seatbid":[{"seat":"old","bid":[{"id":"x","impid":"1","price":1}]}],"SeatBid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}],"cur":"USD"}`,
	`{"seatbid":[{"bid":[{"id":"x"},{"id":"y"}],"seat":"s","bid":[{"id":"b1","impid":"1","price":1}]}]}`,
	`{"seatbid":[{"bid":[{"id":"b1"}]}],"seatbid":[{"seat":"s"}]}`,
	`{"seatbid":[{"bid":[{"id":"a"},{"id":"b"}]},{"bid":[]},{"bid":[{"id":"c"}]}],"seatbid":[{"bid":[{"id":"d"}]},{"seat":"x"}]}`,
	`{"s\u0065atbid":[{"BID":[{"id":"é\ud83d\ude00\ud800","adm":"a\u2019b"}],"seat":""}],"seatbid":null}`,
	"{\"seatbid\":[{\"bid\":[{\"id\":\"\xff\xfe\",\"ext\":{\"seatbid\":[{\"bid\":[{\"x\":1}]}]}}]}]}",
	`{"seatbid":[null,{"bid":[{"id":"1"}]},{}],"id":"x","ext":{"seatbid":[{"bid":[{"id":"n"}]}]}}`,
	`{"seatbid":[{"bid":[{"id":"1","ext":{"a":[[[{"b":"c"}]]]}}],"group":0}]} `,
	` [ {"seatbid":[{"bid":[{"id":"1"}]}]} ] `,
	`"just a string"`,
	`{}`,
	`null`,
}

func TestScanValuesMatchesTheReference(t *testing.T) {
	for _, s := range scanValuesSeeds {
		checkScanValues(t, []byte(s))
	}
	_, resp := readTypical(t)
	checkScanValues(t, resp)
}

func TestScanValuesSegments(t *testing.T) {
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	doc := `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","adm":"x\u0041"},{"id":"b2"}],"zz":"z"}],"cur":"USD"}`
	require.NoError(t, ev.DecodeResponse([]byte(doc), 1000))
	var v engine.ScanValues
	v.Build(&ev.In)
	_, segs := tableValues(&v)
	// root, "r1", seatbid array, seatbid, "s", bid array | bid 0: object,
	// "b1", "xA" | bid 1: object, "b2" | "z", "USD".
	require.Equal(t, [][2]int{{-1, 6}, {0, 3}, {1, 2}, {-1, 2}}, segs)
	var before []int
	for _, seg := range v.Segments() {
		before = append(before, seg.Before)
	}
	require.Equal(t, []int{0, 0, 0, 6}, before, "the envelope's second segment starts at its value 7")
	seg := &v.Segments()[1]
	s, node := v.String(seg, 1)
	require.Equal(t, "xA", string(s))
	require.Equal(t, 3, node)
}

// FuzzScanValues compares the table of scanned values with the reference
// reading on every response the decoder accepts, and walks every input.
func FuzzScanValues(f *testing.F) {
	for _, s := range scanValuesSeeds {
		f.Add([]byte(s))
	}
	_, resp := readTypical(f)
	f.Add(resp)
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 1<<16 {
			return
		}
		// Any bytes, even undecodable: the walk stops without a panic.
		var v engine.ScanValues
		v.Build(&engine.Input{RawResponse: doc})
		checkScanValues(t, doc)
	})
}

// BenchmarkScanValues is the walk of the typical response into its values,
// once per request.
func BenchmarkScanValues(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	var v engine.ScanValues
	b.ReportAllocs()
	b.SetBytes(int64(len(ev.In.RawResponse)))
	for b.Loop() {
		v.Build(&ev.In)
	}
}
