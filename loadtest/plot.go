package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The report's plots are inline SVG in one self-contained HTML page: no
// dependency (a PNG library would add a font and image stack to the
// module), readable in any browser, diffable as text, and testable by
// parsing. Latencies are plotted in milliseconds on a log scale.

// series is one line (or bar set) of a chart.
type series struct {
	name   string
	xs, ys []float64
}

// tick is an axis mark at a value with a label.
type tick struct {
	at    float64
	label string
}

// chart is a line chart, or a bar chart when bars is set (one series).
type chart struct {
	title, xLabel, yLabel string
	logY, bars            bool
	xTicks                []tick // nil: computed
	series                []series
}

const (
	chartW, chartH                     = 820, 340
	padLeft, padRight, padTop, padBott = 70, 170, 30, 45
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// bounds returns the data's extent, y in log10 when logY.
func (c *chart) bounds() (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range c.series {
		for i, x := range s.xs {
			y := c.y(s.ys[i])
			if math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			x0, x1 = math.Min(x0, x), math.Max(x1, x)
			y0, y1 = math.Min(y0, y), math.Max(y1, y)
		}
	}
	if math.IsInf(x0, 1) {
		return 0, 1, 0, 1
	}
	if c.bars {
		y0 = math.Min(y0, 0)
		// Whole bars inside the frame: the first and last bins' halves
		// would otherwise cross the axes and the first one the y labels.
		half := c.binWidth() / 2
		x0, x1 = x0-half, x1+half
	}
	if c.logY {
		y0, y1 = math.Floor(y0), math.Ceil(y1)
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	return x0, x1, y0, y1
}

// binWidth is the x distance between neighbouring bars: the smallest gap
// between bin positions (1 with a single bin).
func (c *chart) binWidth() float64 {
	w := math.Inf(1)
	for _, s := range c.series {
		for i := 1; i < len(s.xs); i++ {
			if d := s.xs[i] - s.xs[i-1]; d > 0 {
				w = math.Min(w, d)
			}
		}
	}
	if math.IsInf(w, 1) {
		return 1
	}
	return w
}

func (c *chart) y(v float64) float64 {
	if c.logY {
		return math.Log10(v)
	}
	return v
}

// writeSVG draws the chart.
func (c *chart) writeSVG(w io.Writer) {
	x0, x1, y0, y1 := c.bounds()
	pw, ph := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBott)
	px := func(x float64) float64 { return padLeft + (x-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return padTop + ph - (y-y0)/(y1-y0)*ph }
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", chartW, chartH)
	fmt.Fprintf(w, `<text x="%d" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", padLeft, html.EscapeString(c.title))
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%g" height="%g" fill="none" stroke="#888"/>`+"\n", padLeft, padTop, pw, ph)
	for _, t := range c.yTicks(y0, y1) {
		y := py(t.at)
		fmt.Fprintf(w, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			padLeft, padLeft+pw, y, y, padLeft-4, y+4, t.label)
	}
	xt := c.xTicks
	if xt == nil {
		xt = linearTicks(x0, x1)
	}
	for _, t := range xt {
		if t.at < x0 || t.at > x1 {
			continue
		}
		x := px(t.at)
		fmt.Fprintf(w, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%g" stroke="#eee"/><text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n",
			x, x, padTop, padTop+ph, x, padTop+ph+14, t.label)
	}
	fmt.Fprintf(w, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", padLeft+pw/2, chartH-6, html.EscapeString(c.xLabel))
	fmt.Fprintf(w, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`+"\n", padTop+ph/2, padTop+ph/2, html.EscapeString(c.yLabel))
	for i, s := range c.series {
		color := palette[i%len(palette)]
		if c.bars {
			bw := c.binWidth() / (x1 - x0) * pw * 0.9
			for j, x := range s.xs {
				top := py(c.y(s.ys[j]))
				fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", px(x)-bw/2, top, bw, padTop+ph-top, color)
			}
		} else {
			var pts strings.Builder
			for j, x := range s.xs {
				y := c.y(s.ys[j])
				if math.IsNaN(y) || math.IsInf(y, 0) {
					continue
				}
				fmt.Fprintf(&pts, "%.1f,%.1f ", px(x), py(y))
			}
			fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", color, pts.String())
		}
		ly := padTop + 12 + 16*i
		fmt.Fprintf(w, `<rect x="%g" y="%d" width="12" height="3" fill="%s"/><text x="%g" y="%d">%s</text>`+"\n",
			padLeft+pw+10, ly-4, color, padLeft+pw+26, ly, html.EscapeString(s.name))
	}
	fmt.Fprintln(w, "</svg>")
}

func (c *chart) yTicks(y0, y1 float64) []tick {
	if !c.logY {
		return linearTicks(y0, y1)
	}
	var out []tick
	for e := math.Floor(y0); e <= y1; e++ {
		for _, m := range []float64{1, 2, 5} {
			if at := e + math.Log10(m); at >= y0 && at <= y1 {
				out = append(out, tick{at, strconv.FormatFloat(m*math.Pow(10, e), 'g', 4, 64)})
			}
		}
	}
	return out
}

// linearTicks returns about 6 ticks at multiples of 1, 2 or 5 × 10^k.
func linearTicks(lo, hi float64) []tick {
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/6)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 7 {
			step *= m
			break
		}
	}
	var out []tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		out = append(out, tick{v, strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return out
}

// percentileTicks label the x axis of a percentile plot, whose x is
// −log10(1 − q).
var percentileTicks = []tick{{0, "0%"}, {math.Log10(2), "50%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {4, "99.99%"}, {5, "99.999%"}}

// percentileSeries is a histogram's latency (ms) by percentile, x as in
// percentileTicks, up to the percentile its count resolves.
func percentileSeries(name string, h *hdrhistogram.Histogram) series {
	s := series{name: name}
	n := h.TotalCount()
	if n == 0 {
		return s
	}
	for k := 0; k <= 50; k++ {
		x := float64(k) / 10
		q := 1 - math.Pow(10, -x)
		if k > 0 && (1-q)*float64(n) < 1 {
			break
		}
		s.xs = append(s.xs, x)
		s.ys = append(s.ys, float64(h.ValueAtQuantile(100*q))/1000)
	}
	s.xs = append(s.xs, math.Min(math.Log10(float64(n)), 5))
	s.ys = append(s.ys, float64(h.Max())/1000)
	return s
}

// histogramBars is a histogram's counts in log-spaced latency bins (10 per
// decade); x is log10 of the bin's lower edge in ms.
func histogramBars(h *hdrhistogram.Histogram) series {
	bins := map[int]int64{}
	lo, hi := math.MaxInt, math.MinInt
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		k := int(math.Floor(10 * math.Log10(math.Max(float64(b.From), 1)/1000)))
		bins[k] += b.Count
		lo, hi = min(lo, k), max(hi, k)
	}
	s := series{name: "requests"}
	for k := lo; k <= hi; k++ {
		s.xs = append(s.xs, float64(k)/10)
		s.ys = append(s.ys, float64(bins[k]))
	}
	return s
}

// logMsTicks label an x axis holding log10 of milliseconds.
func logMsTicks(s series) []tick {
	if len(s.xs) == 0 {
		return nil
	}
	var out []tick
	for e := math.Floor(s.xs[0]); e <= s.xs[len(s.xs)-1]+1; e++ {
		for _, m := range []float64{1, 2, 5} {
			out = append(out, tick{e + math.Log10(m), strconv.FormatFloat(m*math.Pow(10, e), 'g', 4, 64)})
		}
	}
	return out
}

// intervalPeriod is how often an attack of length run records an interval,
// and so the time resolution of the latency-over-time plots: every second,
// or a tenth of the run, in steps of 100 ms (at least 100 ms), for runs
// under 10 s, so that a run of a few seconds still draws a line of ten
// points rather than one point per second.
func intervalPeriod(run time.Duration) time.Duration {
	if run >= 10*time.Second {
		return time.Second
	}
	return max(100*time.Millisecond, (run / 10).Round(100*time.Millisecond))
}

// intervalKey is the merge key of an interval ending t seconds into a run:
// its end in tenths of a second (interval periods are multiples of 100 ms,
// so concurrent runs' intervals line up).
func intervalKey(t float64) int { return int(math.Round(t * 10)) }

// overTime is the p50, p90, p99 and max of each interval, in ms.
func overTime(ivs []Interval) []series {
	out := []series{{name: "p50"}, {name: "p90"}, {name: "p99"}, {name: "max"}}
	for _, iv := range ivs {
		if iv.Latency.Count == 0 {
			continue
		}
		for i, v := range []int64{iv.Latency.P50Us, iv.Latency.P90Us, iv.Latency.P99Us, iv.Latency.MaxUs} {
			out[i].xs = append(out[i].xs, iv.T)
			out[i].ys = append(out[i].ys, float64(v)/1000)
		}
	}
	return out
}

// overTimeTitle names the latency-over-time chart with its resolution: the
// typical step between intervals.
func overTimeTitle(prefix string, ivs []Interval) string {
	step := 1.0
	if len(ivs) > 1 {
		var d []float64
		for i := 1; i < len(ivs); i++ {
			d = append(d, ivs[i].T-ivs[i-1].T)
		}
		slices.Sort(d)
		step = d[len(d)/2]
	}
	if step >= 0.95 {
		return prefix + " (per second)"
	}
	return fmt.Sprintf("%s (per %d ms)", prefix, int(math.Round(step*10))*100)
}

// writePage writes a self-contained HTML page: a title, the text report in
// a <pre>, then the charts.
func writePage(w io.Writer, title, text string, charts []*chart) {
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>%s</h1>\n<pre>%s</pre>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
	for _, c := range charts {
		c.writeSVG(w)
	}
	fmt.Fprintln(w, "</body></html>")
}
