package rtb

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Bucket upper bounds of the duration histograms (docs/design.md, Metrics).
var (
	// upstreamBuckets spans a bidder round trip, 100 µs to 1 s: dense from
	// 5 ms to 300 ms, where bidders answer and tmax deadlines fall, so that
	// histogram_quantile(0.99, …) is within a few milliseconds there.
	upstreamBuckets = durations(
		100*time.Microsecond, 250*time.Microsecond, 500*time.Microsecond,
		time.Millisecond, 2500*time.Microsecond, 5*time.Millisecond, 7500*time.Microsecond,
		10*time.Millisecond, 15*time.Millisecond, 20*time.Millisecond, 30*time.Millisecond,
		40*time.Millisecond, 50*time.Millisecond, 75*time.Millisecond, 100*time.Millisecond,
		125*time.Millisecond, 150*time.Millisecond, 200*time.Millisecond, 250*time.Millisecond,
		300*time.Millisecond, 400*time.Millisecond, 500*time.Millisecond, 750*time.Millisecond,
		time.Second)
	// gateBuckets spans one gate's evaluation, 250 ns to 10 ms: most gates
	// take well under a microsecond, the markup gates a few microseconds on
	// a 20 KB creative, and anything near a millisecond is a problem.
	gateBuckets = durations(
		250*time.Nanosecond, 500*time.Nanosecond, time.Microsecond, 2500*time.Nanosecond,
		5*time.Microsecond, 10*time.Microsecond, 25*time.Microsecond, 50*time.Microsecond,
		100*time.Microsecond, 250*time.Microsecond, 500*time.Microsecond,
		time.Millisecond, 2500*time.Microsecond, 5*time.Millisecond, 10*time.Millisecond)
)

func durations(d ...time.Duration) []int64 {
	ns := make([]int64, len(d))
	for i, v := range d {
		ns[i] = int64(v)
	}
	if !slices.IsSorted(ns) {
		panic("rtb: histogram bounds out of order")
	}
	return ns
}

// histogram is a Prometheus histogram of durations with fixed buckets: an
// observation is one binary search and two atomic adds, no lock and no
// allocation. counts[i] counts observations in (bounds[i-1], bounds[i]],
// the last one those above every bound (+Inf).
type histogram struct {
	bounds []int64 // nanoseconds, ascending; shared by the family
	counts []atomic.Uint64
	sumNs  atomic.Int64
}

// observe counts one duration.
func (h *histogram) observe(d time.Duration) { h.observeNs(int64(d)) }

// observeNs counts one duration in nanoseconds.
func (h *histogram) observeNs(ns int64) {
	lo, hi := 0, len(h.bounds)
	for lo < hi { // first bound >= ns
		mid := int(uint(lo+hi) >> 1)
		if h.bounds[mid] < ns {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	h.counts[lo].Add(1)
	h.sumNs.Add(ns)
}

// histFamily is one histogram metric: its series by label set, created
// up front (a snapshot's gates and upstreams) and kept for the life of the
// Server, so that a reload carries the counts on.
type histFamily struct {
	name   string
	label  string // the one label that tells series apart
	bounds []int64
	les    []string // formatted bounds, seconds

	mu     sync.Mutex
	series map[string]*histogram // by label value
}

func newHistFamily(name, label string, bounds []int64) *histFamily {
	f := &histFamily{name: name, label: label, bounds: bounds, series: map[string]*histogram{}}
	for _, b := range bounds {
		f.les = append(f.les, strconv.FormatFloat(float64(b)/1e9, 'f', -1, 64))
	}
	return f
}

// get returns the series of one label value, created on first use.
func (f *histFamily) get(value string) *histogram {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.series[value]
	if h == nil {
		h = &histogram{bounds: f.bounds, counts: make([]atomic.Uint64, len(f.bounds)+1)}
		f.series[value] = h
	}
	return h
}

// write writes the family in Prometheus text format: cumulative _bucket
// series with le, then _sum (seconds) and _count. _count is the +Inf
// bucket as read, so the two agree within a scrape.
func (f *histFamily) write(w io.Writer) {
	f.mu.Lock()
	values := make([]string, 0, len(f.series))
	for v := range f.series {
		values = append(values, v)
	}
	f.mu.Unlock()
	slices.Sort(values)
	var b bytes.Buffer
	b.WriteString("# TYPE " + f.name + " histogram\n")
	for _, v := range values {
		f.mu.Lock()
		h := f.series[v]
		f.mu.Unlock()
		labels := series("", f.label, v) // {label="v"}
		open := labels[:len(labels)-1] + ","
		var cum uint64
		for i := range h.counts {
			cum += h.counts[i].Load()
			le := "+Inf"
			if i < len(f.les) {
				le = f.les[i]
			}
			b.WriteString(f.name + "_bucket" + open + `le="` + le + `"} ` + strconv.FormatUint(cum, 10) + "\n")
		}
		b.WriteString(f.name + "_sum" + labels + " " + strconv.FormatFloat(float64(h.sumNs.Load())/1e9, 'g', -1, 64) + "\n")
		b.WriteString(f.name + "_count" + labels + " " + strconv.FormatUint(cum, 10) + "\n")
	}
	_, _ = w.Write(b.Bytes())
}
