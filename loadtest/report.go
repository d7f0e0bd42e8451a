package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Report is a run's (or several concurrent runs') results, as printed by
// `loadtest report` and written by -json.
type Report struct {
	Files       []string     `json:"files"`
	Target      string       `json:"target"`
	Mode        string       `json:"mode"`
	Rate        float64      `json:"rate,omitempty"` // summed over the runs
	Connections int          `json:"connections"`    // summed over the runs
	ElapsedS    float64      `json:"elapsed_s"`
	Throughput  float64      `json:"throughput"`
	Tally       Tally        `json:"tally"`
	Ratios      Ratios       `json:"ratios"`
	Latency     Percentiles  `json:"latency"`
	LateShare   float64      `json:"late_share"`
	Warnings    []string     `json:"warnings,omitempty"`
	Guard       *GuardCounts `json:"bidguard,omitempty"`
	Bids        *BidCheck    `json:"bids,omitempty"`
	hist        *hdrhistogram.Histogram
	intervals   []Interval
}

// Ratios are shares of the completed requests.
type Ratios struct {
	Bid   float64 `json:"bid"`    // 2xx with a body
	NoBid float64 `json:"no_bid"` // 204
	Error float64 `json:"error"`  // everything else: other statuses, transport errors
}

// BidCheck compares what the fake bidder sent with what reached the client.
type BidCheck struct {
	Sent          map[string]int64 `json:"sent"`     // by tag, from the bidder
	Received      map[string]int64 `json:"received"` // by tag, found in the answers
	BadSent       int64            `json:"bad_sent"`
	BadReceived   int64            `json:"bad_received"` // must be 0
	LateSent      int64            `json:"late_sent"`
	LateReceived  int64            `json:"late_received"` // must be 0
	ValidSent     int64            `json:"valid_sent"`
	ValidReceived int64            `json:"valid_received"`
	ValidLost     int64            `json:"valid_lost"`
	Gates         []GateRow        `json:"gates"`
	Fallbacks     map[string]int64 `json:"fallbacks,omitempty"`
}

// GateRow is one gate: the bad bids sent for it and what bidguard counted.
type GateRow struct {
	Gate     string   `json:"gate"`
	Kinds    []string `json:"kinds,omitempty"`
	Expected int64    `json:"expected"` // bad bids the bidder sent for this gate
	Rejected int64    `json:"rejected"` // bidguard_bids_rejected_total for this gate
}

// Passed reports whether no bad or late bid reached the client.
func (b *BidCheck) Passed() bool { return b.BadReceived == 0 && b.LateReceived == 0 }

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("report", stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	htmlOut := fs.String("html", "", "write an HTML page with the plots to this file")
	compare := fs.Bool("compare", false, "one series per file (each labelled by its -label) instead of merging the files")
	metricsURL := fs.String("metrics", "", "bidguard admin /metrics URL to read now (when the results carry no counts)")
	bidderURL := fs.String("bidder", "", "fake bidder base URL to read the counts from now (idem)")
	allowRemote := fs.Bool("allow-remote", false, "allow non-loopback -metrics and -bidder URLs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "report: no results file given")
		return 2
	}
	var runs []*runRecords
	for _, path := range fs.Args() {
		r, err := readRun(path)
		if err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 2
		}
		runs = append(runs, r)
	}
	groups := [][]*runRecords{runs}
	if *compare {
		groups = groups[:0]
		for _, r := range runs {
			groups = append(groups, []*runRecords{r})
		}
	}
	var reps []*Report
	for _, g := range groups {
		rep, err := buildReport(g)
		if err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 2
		}
		reps = append(reps, rep)
	}
	if !*compare {
		if err := fillLive(reps[0], *metricsURL, *bidderURL, *allowRemote); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
	}
	var text strings.Builder
	if *compare {
		writeCompareText(&text, reps)
	} else {
		writeText(&text, reps[0])
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var v any = reps[0]
		if *compare {
			v = reps
		}
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
	} else {
		fmt.Fprint(stdout, text.String())
	}
	if *htmlOut != "" {
		if err := writeHTML(*htmlOut, reps, text.String(), *compare); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
	}
	for _, r := range reps {
		if r.Bids != nil && !r.Bids.Passed() {
			fmt.Fprintln(stderr, "report: FAIL: bad or late bids reached the client")
			return 1
		}
	}
	return 0
}

// buildReport merges runs as concurrent attacks: counts and histograms are
// summed, the window is the longest, throughputs add up.
func buildReport(runs []*runRecords) (*Report, error) {
	rep := &Report{hist: newHist(), Mode: runs[0].meta.Mode}
	var targets []string
	var lateAfterUs int64
	byT := map[int]*Interval{}
	for _, r := range runs {
		rep.Files = append(rep.Files, r.file)
		if !slices.Contains(targets, r.meta.Target) {
			targets = append(targets, r.meta.Target)
		}
		if r.meta.Mode != rep.Mode {
			rep.Mode = "mixed"
		}
		rep.Rate += r.meta.Rate
		lateAfterUs = max(lateAfterUs, r.meta.LateAfterUs)
		rep.Connections += r.meta.Connections
		s := r.summary
		rep.ElapsedS = math.Max(rep.ElapsedS, s.ElapsedS)
		rep.Throughput += s.Throughput
		rep.Tally.add(&s.Tally)
		rep.Warnings = append(rep.Warnings, s.Warnings...)
		h, err := decodeHist(s.Hist)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.file, err)
		}
		rep.hist.Merge(h)
		if s.Guard != nil {
			rep.Guard = addGuard(rep.Guard, s.Guard)
		}
		if s.Bidder != nil {
			rep.Bids = addBidder(rep.Bids, s.Bidder)
		}
		for _, iv := range r.intervals {
			k := intervalKey(iv.T)
			m, ok := byT[k]
			if !ok {
				m = &Interval{T: float64(k) / 10, Hist: ""}
				byT[k] = m
			}
			if err := mergeInterval(m, &iv); err != nil {
				return nil, fmt.Errorf("%s: %w", r.file, err)
			}
		}
	}
	rep.Target = strings.Join(targets, ", ")
	for _, iv := range byT {
		rep.intervals = append(rep.intervals, *iv)
	}
	sort.Slice(rep.intervals, func(i, j int) bool { return rep.intervals[i].T < rep.intervals[j].T })
	rep.Latency = percentiles(rep.hist)
	rep.Ratios = ratios(&rep.Tally)
	if rep.Tally.Sent > 0 {
		rep.LateShare = float64(rep.Tally.Late) / float64(rep.Tally.Sent)
	}
	// The late-send warning is recomputed over the merged runs.
	rep.Warnings = slices.DeleteFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "due time") })
	if w := lateWarning(rep.Tally.Late, rep.Tally.Sent, time.Duration(lateAfterUs)*time.Microsecond); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	if rep.Bids != nil {
		rep.Bids.finish(rep.Tally.Bids, rep.Guard)
	}
	return rep, nil
}

// mergeInterval adds iv into m; the latency percentiles are recomputed from
// the merged histogram.
func mergeInterval(m, iv *Interval) error {
	h, err := decodeHist(m.Hist)
	if err != nil {
		return err
	}
	o, err := decodeHist(iv.Hist)
	if err != nil {
		return err
	}
	h.Merge(o)
	m.Tally.add(&iv.Tally)
	m.Latency = percentiles(h)
	m.Hist, err = encodeHist(h)
	return err
}

func ratios(t *Tally) Ratios {
	if t.Completed == 0 {
		return Ratios{}
	}
	n := float64(t.Completed)
	return Ratios{Bid: float64(t.OK) / n, NoBid: float64(t.NoBid) / n, Error: float64(t.Failed()) / n}
}

func addGuard(a, b *GuardCounts) *GuardCounts {
	if a == nil {
		a = &GuardCounts{}
	}
	a.Rejected = addCounts(a.Rejected, b.Rejected)
	a.Bids = addCounts(a.Bids, b.Bids)
	a.Requests = addCounts(a.Requests, b.Requests)
	a.UpstreamErrors = addCounts(a.UpstreamErrors, b.UpstreamErrors)
	return a
}

func addBidder(a *BidCheck, b *BidderCounts) *BidCheck {
	if a == nil {
		a = &BidCheck{}
	}
	a.Sent = addCounts(a.Sent, b.Bids)
	a.Fallbacks = addCounts(a.Fallbacks, b.Fallbacks)
	for tag, gate := range b.Gates {
		if i := slices.IndexFunc(a.Gates, func(g GateRow) bool { return g.Gate == gate }); i < 0 {
			a.Gates = append(a.Gates, GateRow{Gate: gate, Kinds: []string{tag}})
		} else if !slices.Contains(a.Gates[i].Kinds, tag) {
			a.Gates[i].Kinds = append(a.Gates[i].Kinds, tag)
		}
	}
	return a
}

// finish computes the totals from Sent and received (the client's tag
// counts), and each gate's expected and rejected counts. Gates that
// rejected bids without a bad kind of theirs (a valid bid rejected) get a
// row too.
func (b *BidCheck) finish(received map[string]int64, guard *GuardCounts) {
	b.Received = received
	b.BadSent, b.BadReceived, b.LateSent, b.LateReceived, b.ValidSent, b.ValidReceived = 0, 0, 0, 0, 0, 0
	for tag, n := range b.Sent {
		switch {
		case tag == tagOK:
			b.ValidSent += n
		case tag == tagLate:
			b.LateSent += n
		case strings.HasPrefix(tag, tagBad):
			b.BadSent += n
		}
	}
	for tag, n := range received {
		switch {
		case tag == tagOK:
			b.ValidReceived += n
		case tag == tagLate:
			b.LateReceived += n
		default: // bad-<kind> and anything unknown: never expected at the client
			b.BadReceived += n
		}
	}
	b.ValidLost = b.ValidSent - b.ValidReceived
	for i := range b.Gates {
		g := &b.Gates[i]
		sort.Strings(g.Kinds)
		g.Expected = 0
		for _, k := range g.Kinds {
			g.Expected += b.Sent[k]
		}
		if guard != nil {
			g.Rejected = guard.Rejected[g.Gate]
		}
	}
	if guard != nil {
		for gate, n := range guard.Rejected {
			if !slices.ContainsFunc(b.Gates, func(g GateRow) bool { return g.Gate == gate }) {
				b.Gates = append(b.Gates, GateRow{Gate: gate, Rejected: n})
			}
		}
	}
	sort.Slice(b.Gates, func(i, j int) bool { return b.Gates[i].Gate < b.Gates[j].Gate })
}

// fillLive reads bidguard's metrics and the bidder's counts now, for results
// that carry none.
func fillLive(rep *Report, metricsURL, bidderURL string, allowRemote bool) error {
	if metricsURL != "" && rep.Guard == nil {
		g, err := fetchGuard(metricsURL, allowRemote)
		if err != nil {
			return err
		}
		rep.Guard = g
	}
	if bidderURL != "" && rep.Bids == nil {
		c, err := fetchBidder(bidderURL, allowRemote)
		if err != nil {
			return err
		}
		rep.Bids = addBidder(nil, c)
	}
	if rep.Bids != nil {
		rep.Bids.finish(rep.Tally.Bids, rep.Guard)
	}
	return nil
}

func pct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

func writeText(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	mode := "closed loop (maximum throughput)"
	if r.Mode == modeOpen {
		mode = fmt.Sprintf("open loop, %g requests/s", r.Rate)
	}
	fmt.Fprintf(tw, "target\t%s (%s, %d connections)\n", r.Target, mode, r.Connections)
	fmt.Fprintf(tw, "requests\t%d completed in %.1fs: %.1f/s\n", r.Tally.Completed, r.ElapsedS, r.Throughput)
	fmt.Fprintf(tw, "answers\tbid %s, no-bid %s, error %s%s\n", pct(r.Ratios.Bid), pct(r.Ratios.NoBid), pct(r.Ratios.Error), failures(&r.Tally))
	from := "from each request's send"
	if r.Mode == modeOpen {
		from = "from each request's scheduled send time"
	}
	l := r.Latency
	fmt.Fprintf(tw, "latency\tp50 %s, p90 %s, p99 %s, p99.9 %s, max %s (%s)\n", fmtUs(l.P50Us), fmtUs(l.P90Us), fmtUs(l.P99Us), fmtUs(l.P999Us), fmtUs(l.MaxUs), from)
	if r.Mode == modeOpen {
		fmt.Fprintf(tw, "late sends\t%d (%s), worst %s behind\n", r.Tally.Late, pct(r.LateShare), fmtUs(r.Tally.LateMaxUs))
	}
	if g := r.Guard; g != nil {
		fmt.Fprintf(tw, "bidguard\trequests %s; bids %s; upstream errors %s\n", countList(g.Requests), countList(g.Bids), countList(g.UpstreamErrors))
	}
	_ = tw.Flush()
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warn)
	}
	if b := r.Bids; b != nil {
		writeBidCheck(w, b, r.Guard != nil)
	}
}

func failures(t *Tally) string {
	var parts []string
	for k, v := range t.Errors {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	for k, v := range t.Status {
		parts = append(parts, fmt.Sprintf("status %d: %d", k, v))
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, ", ") + ")"
}

// countList writes a count map as "k1 n1, k2 n2" in key order.
func countList(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func writeBidCheck(w io.Writer, b *BidCheck, haveGuard bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nbids by tag (sent by the bidder, reached the client):")
	tags := make([]string, 0, len(b.Sent))
	for t, n := range b.Sent {
		if n > 0 || b.Received[t] > 0 {
			tags = append(tags, t)
		}
	}
	for t := range b.Received {
		if _, ok := b.Sent[t]; !ok {
			tags = append(tags, t)
		}
	}
	sort.Strings(tags)
	for _, t := range tags {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t\n", t, b.Sent[t], b.Received[t])
	}
	_ = tw.Flush()
	if haveGuard {
		fmt.Fprintln(w, "\nrejected per gate (bad bids sent for it, bidguard_bids_rejected_total):")
		for _, g := range b.Gates {
			if g.Expected == 0 && g.Rejected == 0 {
				continue
			}
			note := ""
			switch {
			case len(g.Kinds) == 0:
				note = "  no kind targets it: deadline drops under load, or valid bids rejected"
			case g.Rejected > g.Expected:
				note = "  more than sent: valid bids rejected?"
			case g.Rejected < g.Expected:
				note = "  fewer than sent: answers not judged (bidder timeouts) or rejected by another gate"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\n", g.Gate, g.Expected, g.Rejected, note)
		}
		_ = tw.Flush()
	}
	if len(b.Fallbacks) > 0 {
		fmt.Fprintf(w, "kinds drawn but not applicable to the request (sent valid instead): %s\n", countList(b.Fallbacks))
	}
	lost := 0.0
	if b.ValidSent > 0 {
		lost = float64(b.ValidLost) / float64(b.ValidSent)
	}
	fmt.Fprintf(w, "valid bids lost: %d of %d (%s)\n", b.ValidLost, b.ValidSent, pct(lost))
	verdict := "PASS"
	if !b.Passed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "bad bids that reached the client: %d of %d; late bids: %d of %d: %s\n", b.BadReceived, b.BadSent, b.LateReceived, b.LateSent, verdict)
}

// writeCompareText is one line per run.
func writeCompareText(w io.Writer, reps []*Report) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\treq/s\tbid\terror\tlate\tp50\tp90\tp99\tp99.9\tmax\t")
	for _, r := range reps {
		l := r.Latency
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", runName(r), r.Throughput, pct(r.Ratios.Bid), pct(r.Ratios.Error), pct(r.LateShare),
			fmtUs(l.P50Us), fmtUs(l.P90Us), fmtUs(l.P99Us), fmtUs(l.P999Us), fmtUs(l.MaxUs))
	}
	_ = tw.Flush()
}

func runName(r *Report) string {
	if len(r.Files) == 1 {
		return strings.TrimSuffix(r.Files[0][strings.LastIndexByte(r.Files[0], '/')+1:], ".jsonl")
	}
	return r.Target
}

func writeHTML(path string, reps []*Report, text string, compare bool) error {
	if len(reps) == 0 {
		return errors.New("nothing to plot")
	}
	var charts []*chart
	if compare {
		pc := &chart{title: "latency by percentile", xLabel: "percentile", yLabel: "ms", logY: true, xTicks: percentileTicks}
		for _, r := range reps {
			pc.series = append(pc.series, percentileSeries(runName(r), r.hist))
		}
		charts = append(charts, pc)
		for _, r := range reps {
			charts = append(charts, &chart{title: overTimeTitle(runName(r)+": latency over time", r.intervals), xLabel: "seconds", yLabel: "ms", logY: true, series: overTime(r.intervals)})
		}
	} else {
		r := reps[0]
		bars := histogramBars(r.hist)
		charts = append(charts,
			&chart{title: overTimeTitle("latency over time", r.intervals), xLabel: "seconds", yLabel: "ms", logY: true, series: overTime(r.intervals)},
			&chart{title: "latency by percentile", xLabel: "percentile", yLabel: "ms", logY: true, xTicks: percentileTicks, series: []series{percentileSeries("latency", r.hist)}},
			&chart{title: "latency histogram", xLabel: "ms (log bins)", yLabel: "requests", bars: true, xTicks: logMsTicks(bars), series: []series{bars}})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	writePage(f, "loadtest report", text, charts)
	return f.Close()
}
