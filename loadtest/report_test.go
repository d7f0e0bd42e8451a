package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func histOf(t *testing.T, values ...int64) string {
	t.Helper()
	h := newHist()
	for _, v := range values {
		require.NoError(t, h.RecordValue(v))
	}
	s, err := encodeHist(h)
	require.NoError(t, err)
	return s
}

func TestHistogramEncodeDecodeMerge(t *testing.T) {
	a, err := decodeHist(histOf(t, 100, 200, 300))
	require.NoError(t, err)
	b, err := decodeHist(histOf(t, 1000, 60_000_000))
	require.NoError(t, err)
	a.Merge(b)
	p := percentiles(a)
	require.EqualValues(t, 5, p.Count)
	require.EqualValues(t, 300, p.P50Us)
	require.InDelta(t, 60_000_000, p.MaxUs, 60_000_000*0.001, "3 significant digits")
	empty, err := decodeHist("")
	require.NoError(t, err)
	require.Zero(t, percentiles(empty).Count)
	_, err = decodeHist("not base64")
	require.Error(t, err)
}

// writeRun writes the JSON lines of a finished attack.
func writeRun(t *testing.T, dir, name string, m Meta, ivs []Interval, s Summary) string {
	t.Helper()
	var b bytes.Buffer
	w := newRecordWriter(&b)
	m.Type, s.Type = recMeta, recSummary
	require.NoError(t, w.write(m))
	for _, iv := range ivs {
		iv.Type = recInterval
		require.NoError(t, w.write(iv))
	}
	require.NoError(t, w.write(s))
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

func TestReportMergesConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	m := Meta{Target: "http://127.0.0.1:1/", Mode: modeOpen, Rate: 100, Connections: 8}
	a := writeRun(t, dir, "a.jsonl", m,
		[]Interval{{T: 1.01, Tally: Tally{Completed: 2}, Hist: histOf(t, 100, 100)}},
		Summary{ElapsedS: 2, Throughput: 100, Hist: histOf(t, 100, 100, 100, 100),
			Tally: Tally{Sent: 200, Completed: 200, OK: 150, NoBid: 40, Late: 2, Errors: map[string]int64{errTimeout: 10}, Bids: map[string]int64{"ok": 300}}})
	b := writeRun(t, dir, "b.jsonl", m,
		[]Interval{{T: 0.98, Tally: Tally{Completed: 1}, Hist: histOf(t, 900)}},
		Summary{ElapsedS: 2.5, Throughput: 80, Hist: histOf(t, 900, 900, 900, 900),
			Tally: Tally{Sent: 200, Completed: 200, OK: 200, Late: 2, Bids: map[string]int64{"ok": 400, "bad-floor": 1}}})
	ra, err := readRun(a)
	require.NoError(t, err)
	rb, err := readRun(b)
	require.NoError(t, err)
	rep, err := buildReport([]*runRecords{ra, rb})
	require.NoError(t, err)

	require.Equal(t, 2.5, rep.ElapsedS, "concurrent runs: the longest window")
	require.Equal(t, 180.0, rep.Throughput, "concurrent runs: throughputs add up")
	require.EqualValues(t, 200, rep.Rate)
	require.EqualValues(t, 400, rep.Tally.Completed)
	require.Equal(t, Ratios{Bid: 350.0 / 400, NoBid: 40.0 / 400, Error: 10.0 / 400}, rep.Ratios)
	require.EqualValues(t, 8, rep.Latency.Count)
	require.EqualValues(t, 100, rep.Latency.P50Us)
	require.EqualValues(t, 900, rep.Latency.P90Us)
	require.Equal(t, 0.01, rep.LateShare)
	require.Empty(t, rep.Warnings, "1% late is not over the limit")
	require.Equal(t, map[string]int64{"ok": 700, "bad-floor": 1}, rep.Tally.Bids)
	require.Len(t, rep.intervals, 1, "intervals of the same second merge")
	require.EqualValues(t, 3, rep.intervals[0].Latency.Count)
	require.EqualValues(t, 3, rep.intervals[0].Tally.Completed)
}

func TestBidCheck(t *testing.T) {
	bc := addBidder(nil, &BidderCounts{
		Bids:  map[string]int64{"ok": 100, "late": 5, "bad-floor": 7, "bad-wrong-id": 3, "bad-below-floor": 0},
		Gates: map[string]string{"bad-floor": "rtb.floor", "bad-below-floor": "rtb.floor", "bad-wrong-id": "rtb.response-id"},
	})
	guard := &GuardCounts{Rejected: map[string]int64{"rtb.floor": 7, "rtb.response-id": 3, "rtb.tmax-guard": 2}}
	bc.finish(map[string]int64{"ok": 97}, guard)
	require.True(t, bc.Passed())
	require.EqualValues(t, 3, bc.ValidLost)
	require.EqualValues(t, 10, bc.BadSent)
	require.EqualValues(t, 5, bc.LateSent)
	require.Equal(t, []GateRow{
		{Gate: "rtb.floor", Kinds: []string{"bad-below-floor", "bad-floor"}, Expected: 7, Rejected: 7},
		{Gate: "rtb.response-id", Kinds: []string{"bad-wrong-id"}, Expected: 3, Rejected: 3},
		{Gate: "rtb.tmax-guard", Rejected: 2},
	}, bc.Gates)

	bc.finish(map[string]int64{"ok": 97, "bad-floor": 1}, guard)
	require.False(t, bc.Passed())
	require.EqualValues(t, 1, bc.BadReceived)
	bc.finish(map[string]int64{"late": 1}, guard)
	require.False(t, bc.Passed(), "a late bid must not reach the client either")

	var out strings.Builder
	writeBidCheck(&out, bc, true)
	require.Contains(t, out.String(), "late bids: 1 of 5: FAIL")
}

func TestParseGuardMetrics(t *testing.T) {
	text := `# HELP x
bidguard_bids_rejected_total{seat="other",gate="rtb.floor",nbr="301"} 4
bidguard_bids_rejected_total{seat="seat-a",gate="rtb.floor",nbr="304"} 2
bidguard_bids_rejected_total{seat="other",gate="rtb.impid-match",nbr="300"} 1
bidguard_requests_total{upstream="bench",outcome="bid"} 10
bidguard_upstream_errors_total{upstream="bench",kind="timeout"} 3
bidguard_gate_duration_seconds_bucket{gate="rtb.floor",vmrange="1e-6...2e-6"} 9
bidguard_bids_total{seat="other",verdict="passed"} 12
`
	g, err := parseGuardMetrics(strings.NewReader(text))
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"rtb.floor": 6, "rtb.impid-match": 1}, g.Rejected)
	require.Equal(t, map[string]int64{"bid": 10}, g.Requests)
	require.Equal(t, map[string]int64{"timeout": 3}, g.UpstreamErrors)
	require.Equal(t, map[string]int64{"passed": 12}, g.Bids)
	before := &GuardCounts{Rejected: map[string]int64{"rtb.floor": 6}}
	require.Equal(t, map[string]int64{"rtb.impid-match": 1}, g.sub(before).Rejected)

	v, ok := labelValue(`a="x\"y",b="z"`, "b")
	require.True(t, ok)
	require.Equal(t, "z", v)
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	path := writeRun(t, dir, "run.jsonl", Meta{Target: "http://127.0.0.1:1/", Mode: modeOpen, Rate: 100, Connections: 1, LateAfterUs: 1000},
		[]Interval{{T: 1, Tally: Tally{Completed: 2}, Hist: histOf(t, 100, 2000)}},
		Summary{ElapsedS: 1, Throughput: 2, Hist: histOf(t, 100, 2000), Tally: Tally{Sent: 2, Completed: 2, OK: 2, Late: 1}})
	var out, errOut bytes.Buffer
	page := filepath.Join(dir, "r.html")
	require.Equal(t, 0, run([]string{"report", "-html", page, path}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "open loop, 100 requests/s")
	require.Contains(t, out.String(), "late sends  1 (50.00%)")
	require.Contains(t, out.String(), "WARNING: 50.0% of sends started more than 1ms")
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(html), "<svg"), "latency over time, by percentile, histogram")
	require.Contains(t, string(html), "<polyline")

	out.Reset()
	require.Equal(t, 0, run([]string{"report", "-compare", "-json", path, path}, &out, &errOut), errOut.String())
	require.Equal(t, 2, strings.Count(out.String(), `"throughput"`))
	require.Equal(t, 2, run([]string{"report"}, &out, &errOut))
}
