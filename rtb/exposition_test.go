package rtb

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// exposed is a parsed Prometheus text exposition.
type exposed struct {
	help, typ map[string]string
	samples   map[string][]sample // by family
}

type sample struct {
	name, labels string // labels without braces
	value        float64
}

// parseExposition parses text strictly enough for the format's rules: every
// family once, its # HELP and # TYPE before its samples, samples of one
// family contiguous.
func parseExposition(t *testing.T, text string) exposed {
	t.Helper()
	e := exposed{help: map[string]string{}, typ: map[string]string{}, samples: map[string][]sample{}}
	cur := ""
	done := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if h, ok := strings.CutPrefix(line, "# HELP "); ok {
			fam, txt, _ := strings.Cut(h, " ")
			require.NotContains(t, e.help, fam, "second # HELP for %s", fam)
			require.False(t, done[fam], "family %s split", fam)
			if cur != "" {
				done[cur] = true
			}
			cur = fam
			e.help[fam] = txt
			continue
		}
		if ty, ok := strings.CutPrefix(line, "# TYPE "); ok {
			fam, typ, _ := strings.Cut(ty, " ")
			require.Equal(t, cur, fam, "# TYPE right after # HELP")
			require.Contains(t, []string{"counter", "gauge", "histogram", "summary"}, typ, fam)
			e.typ[fam] = typ
			continue
		}
		require.NotEmpty(t, line)
		require.NotEqual(t, byte('#'), line[0], line)
		name, labels, val := line, "", ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			require.Greater(t, j, i, line)
			name, labels, val = line[:i], line[i+1:j], strings.TrimPrefix(line[j+1:], " ")
		} else {
			var ok bool
			name, val, ok = strings.Cut(line, " ")
			require.True(t, ok, line)
		}
		require.True(t, name == cur || strings.HasPrefix(name, cur+"_"), "sample %q outside its family (current %s)", line, cur)
		v, err := strconv.ParseFloat(val, 64)
		require.NoError(t, err, line)
		e.samples[cur] = append(e.samples[cur], sample{name, labels, v})
	}
	return e
}

// checkHistogram checks one histogram family: per label set, le bounds
// ascending and ending in +Inf, counts cumulative, _count equal to the
// +Inf bucket, a _sum. It returns the _count by label set.
func checkHistogram(t *testing.T, e exposed, fam string, wantLe []string) map[string]float64 {
	t.Helper()
	require.Equal(t, "histogram", e.typ[fam])
	type state struct {
		les  []string
		last float64
		inf  float64
		sum  bool
	}
	by := map[string]*state{}
	counts := map[string]float64{}
	for _, s := range e.samples[fam] {
		switch s.name {
		case fam + "_bucket":
			i := strings.LastIndex(s.labels, `le="`)
			require.GreaterOrEqual(t, i, 0, s.labels)
			key, le := strings.TrimSuffix(s.labels[:i], ","), strings.TrimSuffix(s.labels[i+4:], `"`)
			st := by[key]
			if st == nil {
				st = &state{}
				by[key] = st
			}
			require.GreaterOrEqual(t, s.value, st.last, "%s{%s} cumulative", fam, s.labels)
			st.les, st.last = append(st.les, le), s.value
			if le == "+Inf" {
				st.inf = s.value
			}
		case fam + "_sum":
			by[s.labels].sum = true
		case fam + "_count":
			require.Equal(t, by[s.labels].inf, s.value, "%s_count{%s} is the +Inf bucket", fam, s.labels)
			counts[s.labels] = s.value
		default:
			t.Fatalf("%s in family %s", s.name, fam)
		}
	}
	for key, st := range by {
		require.Equal(t, append(append([]string(nil), wantLe...), "+Inf"), st.les, "%s{%s}", fam, key)
		require.True(t, st.sum, "%s_sum{%s}", fam, key)
	}
	return counts
}

func les(bounds []int64) []string {
	var out []string
	for _, b := range bounds {
		out = append(out, strconv.FormatFloat(float64(b)/1e9, 'f', -1, 64))
	}
	return out
}

// TestExposition: after a judged request, /metrics is valid Prometheus
// text: every family once with a described # HELP and a # TYPE, the
// duration histograms with le buckets that count the request, the build
// info.
func TestExposition(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), "")
	sc.srv.Describe("bidguard_caller_total", "A caller's counter.")
	sc.srv.Metrics().GetOrCreateCounter(`bidguard_caller_total{x="1"}`).Inc()
	a := sc.post("/bid", readFile(t, "typical-request.json"))
	require.Equal(t, 200, a.status, string(a.body))

	resp, err := http.Get(sc.admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	e := parseExposition(t, string(body))

	for fam, help := range e.help {
		require.NotEmpty(t, help, fam)
		require.NotContains(t, help, "no description", "family %s", fam)
		require.NotEmpty(t, e.typ[fam], fam)
	}
	for fam := range metricHelp {
		if fam == "bidguard_bids_rejected_total" || fam == "bidguard_bids_skipped_total" {
			continue // created when their labels first occur
		}
		require.Contains(t, e.help, fam, "%s is registered up front", fam)
	}
	require.Equal(t, "A caller's counter.", e.help["bidguard_caller_total"])
	require.Equal(t, "counter", e.typ["bidguard_requests_total"])
	require.Equal(t, "gauge", e.typ["bidguard_connections_open"])
	require.Equal(t, "counter", e.typ["process_io_read_bytes_total"], "the library's type corrected")
	require.NotContains(t, e.help, "go_cgo_calls_count")
	require.NotContains(t, string(body), "vmrange")

	up := checkHistogram(t, e, "bidguard_upstream_duration_seconds", les(upstreamBuckets))
	require.Equal(t, 1.0, up[`upstream="dsp"`])
	gates := checkHistogram(t, e, "bidguard_gate_duration_seconds", les(gateBuckets))
	require.Equal(t, 1.0, gates[`gate="rtb.impid-match"`], "the first judged response is sampled")
	require.Equal(t, "histogram", e.typ["go_sched_latencies_seconds"], "the library's runtime histograms keep their type")

	require.Equal(t, []sample{{"bidguard_build_info", `version="test",revision="unknown",goversion="` + runtime.Version() + `"`, 1}},
		e.samples["bidguard_build_info"])
	require.Equal(t, "gauge", e.typ["bidguard_build_info"])
}

// TestHistogramBuckets: an observation lands in the first bucket whose
// bound is at or above it (le is inclusive), above every bound in +Inf;
// the sum is exact in nanoseconds.
func TestHistogramBuckets(t *testing.T) {
	f := newHistFamily("x_seconds", "k", durations(time.Microsecond, time.Millisecond))
	h := f.get("a")
	require.Same(t, h, f.get("a"), "one series per label value")
	for _, d := range []time.Duration{0, time.Microsecond, time.Microsecond + 1, time.Millisecond, time.Second} {
		h.observe(d)
	}
	f.get(`b"\`)
	var b bytes.Buffer
	f.write(&b)
	require.Equal(t, `# TYPE x_seconds histogram
x_seconds_bucket{k="a",le="0.000001"} 2
x_seconds_bucket{k="a",le="0.001"} 4
x_seconds_bucket{k="a",le="+Inf"} 5
x_seconds_sum{k="a"} 1.001002001
x_seconds_count{k="a"} 5
x_seconds_bucket{k="b\"\\",le="0.000001"} 0
x_seconds_bucket{k="b\"\\",le="0.001"} 0
x_seconds_bucket{k="b\"\\",le="+Inf"} 0
x_seconds_sum{k="b\"\\"} 0
x_seconds_count{k="b\"\\"} 0
`, b.String())
	require.Panics(t, func() { durations(time.Second, time.Millisecond) })
}

// TestHistogramBoundsSuitTheirRanges: the upstream buckets span 100 µs to
// 1 s, the gate buckets sub-microsecond to 10 ms, both ascending.
func TestHistogramBoundsSuitTheirRanges(t *testing.T) {
	require.Equal(t, int64(100*time.Microsecond), upstreamBuckets[0])
	require.Equal(t, int64(time.Second), upstreamBuckets[len(upstreamBuckets)-1])
	require.Less(t, gateBuckets[0], int64(time.Microsecond))
	require.Equal(t, int64(10*time.Millisecond), gateBuckets[len(gateBuckets)-1])
	for _, b := range [][]int64{upstreamBuckets, gateBuckets} {
		for i := 1; i < len(b); i++ {
			require.Less(t, b[i-1], b[i])
		}
	}
}

// TestGroupFamilies: samples of one family come out together even when
// the input interleaves them (a_b, a_b_c, a_b{x} in name order), a
// histogram's _bucket/_sum/_count stay with it, and the input's own
// # HELP lines are replaced.
func TestGroupFamilies(t *testing.T) {
	m := newMeters()
	m.help["a_b"] = "A b."
	m.set.GetOrCreateGauge("a_b", func() float64 { return 1 })
	m.set.GetOrCreateCounter("a_b_c_total").Inc()
	m.set.GetOrCreateGauge(`a_b{x="1"}`, func() float64 { return 2 })
	var b bytes.Buffer
	m.write(&b, false)
	e := parseExposition(t, b.String())
	require.Equal(t, []sample{{"a_b", "", 1}, {"a_b", `x="1"`, 2}}, e.samples["a_b"])
	require.Equal(t, "A b.", e.help["a_b"])
	require.Equal(t, "gauge", e.typ["a_b"])
	require.Equal(t, "counter", e.typ["a_b_c_total"])
	require.Equal(t, "a_b_c_total (no description)", e.help["a_b_c_total"])

	fams := groupFamilies([]byte("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\nh_other 3\n# TYPE s summary\ns{quantile=\"1\"} 1\ns_bucket 4\n"))
	var names []string
	for _, f := range fams {
		names = append(names, f.name+":"+f.typ+":"+strconv.Itoa(strings.Count(f.lines.String(), "\n")))
	}
	require.Equal(t, []string{"h:histogram:3", "h_other:gauge:1", "s:summary:1", "s_bucket:gauge:1"}, names)
	require.Equal(t, `a\\b\nc`, escapeHelp("a\\b\nc"))
}

// BenchmarkWriteMetrics is one scrape of /metrics under the embedded
// default policy: the admin listener's cost, not the bid path's.
func BenchmarkWriteMetrics(b *testing.B) {
	h := &engine.Holder{}
	h.Store(compile(b, string(configs.Default), nil))
	srv, err := New(h, Options{Version: "bench"})
	require.NoError(b, err)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		srv.WriteMetrics(&buf)
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}
