package main

import (
	"fmt"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: latencies are recorded in microseconds from 1 µs to 60 s
// with 3 significant digits (a value is known to 0.1%). Longer values are
// recorded as 60 s and counted in Tally.Clamped.
const (
	histMinUs  = 1
	histMaxUs  = 60_000_000
	histDigits = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMinUs, histMaxUs, histDigits) }

// Kinds of transport errors in Tally.Errors.
const (
	errTimeout = "timeout"  // no whole answer within -timeout
	errConnect = "connect"  // the dial failed
	errReset   = "reset"    // the connection closed or broke mid-exchange
	errBadHTTP = "bad_http" // an answer that is not HTTP/1.x
)

// Tally holds the counters of a slice of a run: one connection's interval, a
// second of the run, the whole run, or several runs merged. The zero value is
// empty and ready to use; it is not safe for concurrent use.
type Tally struct {
	Sent      int64 `json:"sent"`      // requests whose send started
	Completed int64 `json:"completed"` // answered, or failed with an error
	OK        int64 `json:"ok"`        // 2xx answers other than 204: bids
	NoBid     int64 `json:"nobid"`     // 204 answers
	// Status counts answers outside 2xx by status code.
	Status map[int]int64 `json:"status,omitempty"`
	// Errors counts transport failures by kind (errTimeout, ...).
	Errors map[string]int64 `json:"errors,omitempty"`
	// Late counts sends that started more than the late threshold after
	// their due time; LateMaxUs is the worst lag seen.
	Late      int64 `json:"late"`
	LateMaxUs int64 `json:"late_max_us"`
	// Clamped counts latencies over the histogram's 60 s range.
	Clamped int64 `json:"clamped,omitempty"`
	// Bids counts the bids found in 2xx answers by tag (ok, late,
	// bad-<kind>): see bidTag. Warmup answers count here too, so the sums
	// compare with the fake bidder's counts.
	Bids map[string]int64 `json:"bids,omitempty"`
}

// Failed is the number of completed requests that got no 2xx answer.
func (t *Tally) Failed() int64 { return t.Completed - t.OK - t.NoBid }

// add adds o into t.
func (t *Tally) add(o *Tally) {
	t.Sent += o.Sent
	t.Completed += o.Completed
	t.OK += o.OK
	t.NoBid += o.NoBid
	t.Late += o.Late
	t.LateMaxUs = max(t.LateMaxUs, o.LateMaxUs)
	t.Clamped += o.Clamped
	t.Status = addCounts(t.Status, o.Status)
	t.Errors = addCounts(t.Errors, o.Errors)
	t.Bids = addCounts(t.Bids, o.Bids)
}

func addCounts[K comparable](dst, src map[K]int64) map[K]int64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[K]int64, len(src))
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// Percentiles are the latency percentiles of a histogram, in microseconds.
type Percentiles struct {
	Count  int64   `json:"count"`
	MeanUs float64 `json:"mean_us"`
	P50Us  int64   `json:"p50_us"`
	P90Us  int64   `json:"p90_us"`
	P99Us  int64   `json:"p99_us"`
	P999Us int64   `json:"p99_9_us"`
	MaxUs  int64   `json:"max_us"`
}

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	return Percentiles{
		Count:  h.TotalCount(),
		MeanUs: h.Mean(),
		P50Us:  h.ValueAtQuantile(50),
		P90Us:  h.ValueAtQuantile(90),
		P99Us:  h.ValueAtQuantile(99),
		P999Us: h.ValueAtQuantile(99.9),
		MaxUs:  h.Max(),
	}
}

// encodeHist returns h in the HdrHistogram V2 compressed base64 encoding.
func encodeHist(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// decodeHist decodes encodeHist's output into a histogram of the standard
// range, so histograms of different runs merge without loss.
func decodeHist(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return newHist(), nil
	}
	d, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	h := newHist()
	if dropped := h.Merge(d); dropped > 0 {
		return nil, fmt.Errorf("decode histogram: %d values out of range", dropped)
	}
	return h, nil
}

// connStats is what one connection's goroutine records. The goroutine holds
// mu for each record; collect, once a second, swaps the interval's
// histogram and tally out under mu and merges them outside it, so a
// recording goroutine never waits for a merge.
type connStats struct {
	mu   sync.Mutex
	hist *hdrhistogram.Histogram
	t    Tally
	tags map[string]*int64 // bid tag counters: running totals of the run
}

func newConnStats() *connStats {
	return &connStats{hist: newHist(), tags: map[string]*int64{}}
}

// answer is the outcome of one request.
type answer struct {
	latUs    int64  // from the due time (open model) or the send (closed model)
	lagUs    int64  // how far the send started behind its due time
	late     bool   // lagUs over the late threshold
	measured bool   // false for a warmup request: only its bid tags count
	status   int    // HTTP status; 0 for a transport error
	errKind  string // the transport error's kind when status is 0
	body     []byte // the answer's body (2xx), scanned for bid tags
}

// record adds one answer.
func (s *connStats) record(a *answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.status >= 200 && a.status < 300 && a.status != 204 {
		forEachBidTag(a.body, func(tag []byte) {
			c, ok := s.tags[string(tag)]
			if !ok {
				c = new(int64)
				s.tags[string(tag)] = c
			}
			*c++
		})
	}
	if !a.measured {
		return
	}
	t := &s.t
	t.Sent++
	t.Completed++
	if a.late {
		t.Late++
	}
	t.LateMaxUs = max(t.LateMaxUs, a.lagUs)
	switch {
	case a.status == 204:
		t.NoBid++
	case a.status >= 200 && a.status < 300:
		t.OK++
	case a.status == 0:
		if t.Errors == nil {
			t.Errors = map[string]int64{}
		}
		t.Errors[a.errKind]++
	default:
		if t.Status == nil {
			t.Status = map[int]int64{}
		}
		t.Status[a.status]++
	}
	lat := a.latUs
	if lat > histMaxUs {
		lat = histMaxUs
		t.Clamped++
	}
	_ = s.hist.RecordValue(max(lat, histMinUs)) // in range by construction
}

// collect swaps the interval's histogram for spare (which must be empty)
// and returns it with the interval's tally, and adds the running totals of
// the bid tags into bids.
func (s *connStats) collect(spare *hdrhistogram.Histogram, bids map[string]int64) (*hdrhistogram.Histogram, Tally) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, t := s.hist, s.t
	s.hist, s.t = spare, Tally{}
	for k, c := range s.tags {
		bids[k] += *c
	}
	return h, t
}
