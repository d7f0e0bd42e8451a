package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fastjson"
)

func TestParseCountDist(t *testing.T) {
	f := func(s string, want countDist) {
		t.Helper()
		got, err := parseCountDist(s, "imps")
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	f("imps", countDist{})
	f("", countDist{})
	f("1000", countDist{kind: "fixed", lo: 1000, hi: 1000})
	f("1-20", countDist{kind: "uniform", lo: 1, hi: 20})
	f("geo:5", countDist{kind: "geo", mean: 5})
	for _, bad := range []string{"0", "20-1", "geo:0.5", "geo:x", "1-200000", "all", "-3"} {
		_, err := parseCountDist(bad, "imps")
		require.Error(t, err, bad)
	}
}

// TestCountDistDraws: fixed is fixed, uniform covers its range evenly, a
// geometric has its mean and 1 as its mode; the zero value is the default.
func TestCountDistDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	require.Equal(t, 7, countDist{}.draw(rng, 7))
	require.Equal(t, 1000, countDist{kind: "fixed", lo: 1000, hi: 1000}.draw(rng, 7))
	const n = 40_000
	seen := map[int]int{}
	for range n {
		seen[countDist{kind: "uniform", lo: 1, hi: 20}.draw(rng, 0)]++
	}
	require.Len(t, seen, 20)
	for v, c := range seen {
		require.True(t, v >= 1 && v <= 20)
		require.InDelta(t, n/20, c, n/20*0.15, "value %d", v)
	}
	sum, ones := 0, 0
	for range n {
		k := countDist{kind: "geo", mean: 5}.draw(rng, 0)
		require.GreaterOrEqual(t, k, 1)
		sum += k
		if k == 1 {
			ones++
		}
	}
	require.InDelta(t, 5, float64(sum)/n, 0.15, "mean")
	require.InDelta(t, 0.2, float64(ones)/n, 0.015, "P(1) = 1/mean")
	require.Equal(t, 1, countDist{kind: "geo", mean: 1}.draw(rng, 0))
}

// TestPriceNoise: over a seeded sample, the median of ln(factor) is
// ln(median) and its spread is sigma; the same seed gives the same factors;
// sigma 0 is constant.
func TestPriceNoise(t *testing.T) {
	pn, err := newPriceNoise(1.5, 0.4, 9)
	require.NoError(t, err)
	var src rand.PCG
	rng := rand.New(&src)
	const n = 20_000
	logs := make([]float64, n)
	var sum, sq float64
	for i := range n {
		logs[i] = math.Log(pn.factor(&src, rng, uint64(i)))
		sum += logs[i]
		sq += logs[i] * logs[i]
	}
	slices.Sort(logs)
	require.InDelta(t, math.Log(1.5), logs[n/2], 0.02, "median")
	mean := sum / n
	require.InDelta(t, 0.4, math.Sqrt(sq/n-mean*mean), 0.015, "sigma")
	require.InDelta(t, 0.4*1.6449, logs[n*95/100]-logs[n/2], 0.03, "95th percentile: 1.645 sigma above the median")
	require.Equal(t, pn.factor(&src, rng, 1234), pn.factor(&src, rng, 1234), "a function of (seed, n)")
	other, _ := newPriceNoise(1.5, 0.4, 10)
	require.NotEqual(t, pn.factor(&src, rng, 1234), other.factor(&src, rng, 1234), "another seed")
	flat, _ := newPriceNoise(2, 0, 9)
	require.Equal(t, 2.0, flat.factor(&src, rng, 5))
	for _, bad := range [][2]float64{{0.5, 0.1}, {60, 0.1}, {1.5, -1}, {1.5, math.NaN()}} {
		_, err := newPriceNoise(bad[0], bad[1], 1)
		require.Error(t, err, bad)
	}

	require.Equal(t, 0.5, validPrice(0.2, 0.5, 0.5), "raised to the floor")
	require.Equal(t, 25.0, validPrice(80, 0.5, 0.5), "lowered to 50 x the floor")
	require.Equal(t, 7.5, validPrice(7.4999999, 7.5, 5), "never under the reference in micro-units")
	require.Equal(t, 1.234568, validPrice(1.2345678, 1, 0))
}

// answerFor runs the bidder's path on req: layout, mix, build.
func answerFor(t testing.TB, sh bidShape, m *mix, b *builder, req []byte, n uint64) []byte {
	var (
		p    fastjson.Parser
		info reqInfo
		pl   plan
	)
	require.NoError(t, info.parse(&p, req))
	b.seed(n)
	sh.layout(&info, &pl, b.rng)
	m.draw(&info, &pl, b.rng, func(*kind) {})
	return b.build(nil, &info, &pl)
}

type answerJSON struct {
	Seatbid []struct {
		Seat string
		Bid  []struct {
			ImpID string
			Price float64
			ID    string
		}
	}
}

// TestBidsAndSeats: -bids and -seats-per-response shape answers: the bid
// count, spread over the imps in turn, the seat names of the pool, as many
// seats as drawn (never more than bids), and prices spread around 1.5 x
// the floor within [floor, 50 x floor].
func TestBidsAndSeats(t *testing.T) {
	reqs, err := generateRequests(genOptions{count: 1, impsLo: 3, impsHi: 3, tmaxLo: 100, tmaxHi: 100, seed: 5})
	require.NoError(t, err)
	var rq struct {
		Imp []struct {
			ID       string
			BidFloor float64
		}
	}
	require.NoError(t, json.Unmarshal(reqs[0], &rq))
	floors := map[string]float64{}
	for _, imp := range rq.Imp {
		floors[imp.ID] = imp.BidFloor
	}
	parse := func(body []byte) answerJSON {
		var a answerJSON
		require.NoError(t, json.Unmarshal(body, &a))
		return a
	}
	f := func(bids, perResp string, seats int, wantBids, wantSeats int) answerJSON {
		t.Helper()
		bd, err := parseCountDist(bids, "imps")
		require.NoError(t, err)
		sd, err := parseCountDist(perResp, "all")
		require.NoError(t, err)
		sh := bidShape{bids: bd, seats: seats, seatsPerResp: sd}
		b := newBuilder(new(atomic.Uint64), priceNoise{median: 1.5, sigma: 0.3, seed: 1}, seats)
		a := parse(answerFor(t, sh, newMix(0, nil), b, reqs[0], 1))
		require.Len(t, a.Seatbid, wantSeats, "%s bids, %s seats of %d", bids, perResp, seats)
		n := 0
		for _, sb := range a.Seatbid {
			num, ok := parseSeatName(sb.Seat)
			require.True(t, ok, sb.Seat)
			require.True(t, num >= 1 && num <= seats, sb.Seat)
			require.Len(t, sb.Seat, len("seat-")+max(5, len(strings.TrimPrefix(sb.Seat, "seat-"))))
			n += len(sb.Bid)
		}
		require.Equal(t, wantBids, n)
		return a
	}
	f("imps", "all", 2, 3, 2)
	f("imps", "1", 2, 3, 1)
	f("1", "all", 10_000, 1, 1)
	f("20", "5", 10_000, 20, 5)
	a := f("1000", "all", 10_000, 1000, 1000)
	perImp := map[string]int{}
	var logs []float64
	for _, sb := range a.Seatbid {
		require.Len(t, sb.Bid, 1, "1,000 bids over 1,000 of 10,000 seats: one each")
		for _, b := range sb.Bid {
			perImp[b.ImpID]++
			floor := floors[b.ImpID]
			require.GreaterOrEqual(t, b.Price, floor)
			require.LessOrEqual(t, b.Price, 50*floor)
			logs = append(logs, math.Log(b.Price/floor))
		}
	}
	require.Len(t, perImp, 3)
	for id, c := range perImp {
		require.InDelta(t, 333, c, 1, "imp %s: bids spread over the imps in turn", id)
	}
	slices.Sort(logs)
	require.InDelta(t, math.Log(1.5), logs[len(logs)/2], 0.05, "median price 1.5 x the floor")
	require.Greater(t, logs[len(logs)*9/10]-logs[len(logs)/10], 0.5, "prices spread")

	// With the default bad-bid mix too, -bids is the exact count (the
	// limit bidguard's limits.maxBids applies to the whole answer).
	selected, err := selectKinds("default")
	require.NoError(t, err)
	thousand, _ := parseCountDist("1000", "imps")
	for n := range 20 {
		body := answerFor(t, bidShape{bids: thousand, seats: 10_000}, newMix(0.3, selected),
			newBuilder(new(atomic.Uint64), priceNoise{median: 1.5, sigma: 0.3}, 10_000), reqs[0], uint64(n))
		count := 0
		forEachBidTag(body, func([]byte) { count++ })
		require.Equal(t, 1000, count, "answer %d", n)
	}

	seatsSeen := map[string]bool{}
	bd, _ := parseCountDist("1-4", "imps")
	sh := bidShape{bids: bd, seats: 10_000}
	b := newBuilder(new(atomic.Uint64), priceNoise{median: 1.5}, sh.seats)
	for n := range 2000 {
		for _, sb := range parse(answerFor(t, sh, newMix(0, nil), b, reqs[0], uint64(n))).Seatbid {
			seatsSeen[sb.Seat] = true
		}
	}
	require.Greater(t, len(seatsSeen), 2500, "answers start at a random seat of the pool")
}

func TestSeatNames(t *testing.T) {
	require.Equal(t, "seat-00042", string(newSeatNamer(10_000).append(nil, 42)))
	require.Equal(t, "seat-000042", string(newSeatNamer(100_000).append(nil, 42)))
	require.Equal(t, "seat-00002", string(newSeatNamer(2).append(nil, 2)))
	for s, want := range map[string]int{"seat-2": 2, "seat-00002": 2, "seat-100000": 100_000} {
		n, ok := parseSeatName(s)
		require.True(t, ok, s)
		require.Equal(t, want, n)
	}
	for _, s := range []string{"seat-", "seat-0", "seat-x", "2", "seat-+2", "seat--2"} {
		_, ok := parseSeatName(s)
		require.False(t, ok, s)
	}
}

// BenchmarkAnswer1000 is the cost of one 1,000-bid answer to a three-imp
// display request from a 10,000-seat pool (layout, mix and writing): the
// bidder's own share of a `-bids 1000` run.
func BenchmarkAnswer1000(b *testing.B) {
	benchmarkAnswer(b, genOptions{count: 1, impsLo: 3, impsHi: 3, tmaxLo: 100, tmaxHi: 100, seed: 5}, "1000", 0)
}

// BenchmarkAnswer1000Bad is BenchmarkAnswer1000 with 30% bad bids of the
// default kinds.
func BenchmarkAnswer1000Bad(b *testing.B) {
	benchmarkAnswer(b, genOptions{count: 1, impsLo: 3, impsHi: 3, tmaxLo: 100, tmaxHi: 100, coppa: 1, dsa: 1, seed: 5}, "1000", 0.3)
}

// BenchmarkAnswerTypical is one answer of one bid per imp to the same
// request.
func BenchmarkAnswerTypical(b *testing.B) {
	benchmarkAnswer(b, genOptions{count: 1, impsLo: 3, impsHi: 3, tmaxLo: 100, tmaxHi: 100, seed: 5}, "imps", 0)
}

func benchmarkAnswer(b *testing.B, o genOptions, bids string, bad float64) {
	reqs, err := generateRequests(o)
	require.NoError(b, err)
	bd, err := parseCountDist(bids, "imps")
	require.NoError(b, err)
	sh := bidShape{bids: bd, seats: 10_000}
	selected, err := selectKinds("default")
	require.NoError(b, err)
	m := newMix(bad, selected)
	bl := newBuilder(new(atomic.Uint64), priceNoise{median: 1.5, sigma: 0.3, seed: 1}, sh.seats)
	var (
		p    fastjson.Parser
		info reqInfo
		pl   plan
		buf  []byte
	)
	n := uint64(0)
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if err := info.parse(&p, reqs[0]); err != nil {
			b.Fatal(err)
		}
		n++
		bl.seed(n)
		sh.layout(&info, &pl, bl.rng)
		m.draw(&info, &pl, bl.rng, func(*kind) {})
		buf = bl.build(buf[:0], &info, &pl)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
	b.ReportMetric(float64(len(buf)), "bytes/answer")
	b.ReportMetric(float64(len(bl.sent)), "bids/answer")
}
