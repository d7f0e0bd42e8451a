package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIntervalPeriod(t *testing.T) {
	for run, want := range map[time.Duration]time.Duration{
		300 * time.Millisecond:  100 * time.Millisecond,
		time.Second:             100 * time.Millisecond,
		2500 * time.Millisecond: 300 * time.Millisecond,
		3 * time.Second:         300 * time.Millisecond,
		9 * time.Second:         900 * time.Millisecond,
		10 * time.Second:        time.Second,
		time.Minute:             time.Second,
	} {
		require.Equal(t, want, intervalPeriod(run), "run %v", run)
	}
	require.Equal(t, 10, intervalKey(1.01))
	require.Equal(t, 10, intervalKey(0.98), "concurrent runs' intervals of the same period merge")
	require.Equal(t, 3, intervalKey(0.3004))
}

// TestShortAttackPlotsALine: a one-second attack records ten intervals, so
// its latency-over-time chart is a line of about ten points per series.
func TestShortAttackPlotsALine(t *testing.T) {
	_, base := startBidder(t, bidderOptions{})
	out := filepath.Join(t.TempDir(), "run.jsonl")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"attack", "-target", base + "/bid", "-rate", "200", "-duration", "1s", "-connections", "2",
		"-out", out, "-quiet"}, &stdout, &stderr), stderr.String())
	r, err := readRun(out)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(r.intervals), 9, "one interval per 100 ms")
	rep, err := buildReport([]*runRecords{r})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rep.intervals), 9, "merging keeps the 100 ms intervals apart")
	s := overTime(rep.intervals)
	require.GreaterOrEqual(t, len(s[0].xs), 8)
	require.Equal(t, "latency over time (per 100 ms)", overTimeTitle("latency over time", rep.intervals))
	require.Equal(t, "x (per second)", overTimeTitle("x", []Interval{{T: 1}, {T: 2}, {T: 3}}))
}

// TestHistogramBarsInsideFrame: every bar of a bar chart lies within the
// plot frame, right of the y axis and its labels, and bars do not overlap.
func TestHistogramBarsInsideFrame(t *testing.T) {
	for _, xs := range [][]float64{{-1, -0.9, -0.8, -0.7, 0.5}, {0.3}} {
		ys := make([]float64, len(xs))
		for i := range ys {
			ys[i] = float64(10 * (i + 1))
		}
		c := &chart{title: "h", bars: true, series: []series{{name: "requests", xs: xs, ys: ys}}}
		var b bytes.Buffer
		c.writeSVG(&b)
		bars := regexp.MustCompile(`<rect x="([0-9.-]+)" y="[0-9-]+\.[0-9]" width="([0-9.]+)" height="[0-9.]+" fill="#1f77b4"/>`).FindAllStringSubmatch(b.String(), -1)
		require.Len(t, bars, len(xs))
		right := float64(chartW - padRight)
		prevEnd := float64(padLeft)
		for _, m := range bars {
			x, _ := strconv.ParseFloat(m[1], 64)
			w, _ := strconv.ParseFloat(m[2], 64)
			require.Positive(t, w)
			require.GreaterOrEqual(t, x, prevEnd, "bar at %v starts left of the frame or the previous bar (%v)", x, prevEnd)
			require.LessOrEqual(t, x+w, right+0.1, "bar ends right of the frame")
			prevEnd = x + w
		}
	}
}
