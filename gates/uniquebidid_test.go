package gates

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// uniqueBidIDVerdicts judges every bid of resp and returns each reason ("" for a pass).
func uniqueBidIDVerdicts(tb testing.TB, resp string) []string {
	tb.Helper()
	g := &uniqueBidID{}
	ev := txEval(tb, `{"id":"r","imp":[{"id":"1"}]}`, resp)
	require.Empty(tb, g.Prepare(&ev.In))
	out := make([]string, len(ev.In.Bids))
	for i := range ev.In.Bids {
		v := g.CheckBid(&ev.In, &ev.In.Bids[i])
		if v.Failed() {
			require.Equal(tb, 3, v.Loss)
			require.Equal(tb, 302, v.NBR)
		}
		out[i] = v.Reason
	}
	return out
}

func TestUniqueBidID(t *testing.T) {
	f := func(resp string, want ...string) {
		t.Helper()
		require.Equal(t, want, uniqueBidIDVerdicts(t, resp), resp)
	}
	f(`{"id":"r","seatbid":[{"bid":[{"id":"a"},{"id":"b"}]},{"bid":[{"id":"c"}]}]}`, "", "", "")
	f(`{"id":"r","seatbid":[{"bid":[{"id":"a"},{"id":"a"}]}]}`, "", "duplicate bid id: a")
	// Across seatbids, in response order: the later ones fail.
	f(`{"id":"r","seatbid":[{"bid":[{"id":"a"},{"id":"b"}]},{"bid":[{"id":"b"},{"id":"a"},{"id":"a"}]}]}`,
		"", "", "duplicate bid id: b", "duplicate bid id: a", "duplicate bid id: a")
	f(`{"id":"r","seatbid":[{"bid":[{"id":"a"},{"id":"A"},{"id":"a "}]}]}`, "", "", "") // byte for byte
	// A missing id is requiredFields' concern.
	f(`{"id":"r","seatbid":[{"bid":[{"impid":"1"},{"id":""}]}]}`, "", "")
	long := strings.Repeat("x", 70)
	f(`{"id":"r","seatbid":[{"bid":[{"id":"`+long+`"},{"id":"`+long+`"}]}]}`, "", "duplicate bid id: "+long[:64]+"...")
	f(`{"id":"r","seatbid":[{"bid":[{"id":"a\u0001"},{"id":"a\u0001"}]}]}`, "", "duplicate bid id: a?")
}

// TestUniqueBidIDLarge checks the linear scan against a map over many bids.
func TestUniqueBidIDLarge(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"id":"r","seatbid":[{"bid":[`)
	want := make([]string, 0, 500)
	seen := map[string]bool{}
	for i := range 500 {
		id := "bid-" + strconv.Itoa((i*7919)%450)
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":"` + id + `"}`)
		if seen[id] {
			want = append(want, "duplicate bid id: "+id)
		} else {
			want = append(want, "")
		}
		seen[id] = true
	}
	sb.WriteString(`]}]}`)
	require.Equal(t, want, uniqueBidIDVerdicts(t, sb.String()))
}

func benchUniqueBidID(b *testing.B, in *engine.Input) {
	g := &uniqueBidID{}
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Prepare(in)
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				b.Fatal(v.Reason)
			}
		}
	}
}

func BenchmarkUniqueBidID(b *testing.B) { benchUniqueBidID(b, &txTypical(b).In) }

// BenchmarkUniqueBidIDMaxBids judges a response at limits.maxBids (1,000
// bids, unique ids of one length): the quadratic worst case.
func BenchmarkUniqueBidIDMaxBids(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"id":"r","seatbid":[{"bid":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":"` + strconv.Itoa(100000+i) + `","impid":"1","price":1}`)
	}
	sb.WriteString(`]}]}`)
	benchUniqueBidID(b, &txEval(b, `{"id":"r","imp":[{"id":"1"}]}`, sb.String()).In)
}
