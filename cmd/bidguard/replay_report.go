package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"sort"
	"strings"
)

// replayReport is what replay prints; its JSON form is --json.
type replayReport struct {
	// Pairs judged; Malformed inputs skipped (lines that are not records,
	// pairs that do not decode).
	Pairs     int `json:"pairs"`
	Malformed int `json:"malformed"`
	// Unmatched records' verdicts did not list the bids replay decoded,
	// so they were not compared (without --baseline).
	Unmatched int `json:"unmatched,omitempty"`
	// Baseline is --baseline's config, or the capture's recorded verdicts
	// (BaselineKind says which; "none" for pairs without them).
	BaselineKind string `json:"baselineKind"`
	Baseline     tally  `json:"baseline"`
	Candidate    tally  `json:"candidate"`
	// Difference is candidate minus baseline, per gate and per seat.
	Difference struct {
		BidsRejected int            `json:"bidsRejected"`
		ByGate       map[string]int `json:"byGate"`
		BySeat       map[string]int `json:"bySeat"`
	} `json:"difference"`
	// NewlyRejected bids pass under the baseline and fail under the
	// candidate; NewlyPassed the other way. The examples are the first in
	// input order.
	NewlyRejected         int           `json:"newlyRejected"`
	NewlyPassed           int           `json:"newlyPassed"`
	NewlyRejectedExamples []bidExample  `json:"newlyRejectedExamples"`
	NewlyPassedExamples   []bidExample  `json:"newlyPassedExamples"`
	MalformedExamples     []inputReport `json:"malformedExamples"`
}

// tally counts one side's rejections. A rejected bid is one removed, or
// that would be under action: shadow, by its own rejection or the
// response's; ByGate and BySeat count those bids.
type tally struct {
	Config  string `json:"config,omitempty"`
	Version string `json:"version,omitempty"`
	// Versions are the config versions the capture's verdicts name, with
	// their pairs (the capture baseline only).
	Versions          map[string]int `json:"versions,omitempty"`
	Pairs             int            `json:"pairs"`
	BidsJudged        int            `json:"bidsJudged"`
	BidsRejected      int            `json:"bidsRejected"`
	ResponsesRejected int            `json:"responsesRejected"`
	ByGate            map[string]int `json:"byGate"`
	BySeat            map[string]int `json:"bySeat"`
	names             map[string]string
}

// bidExample is one bid whose verdict changed; Gate and Reason are the
// failing side's.
type bidExample struct {
	seq, bid  int
	Where     string `json:"where"`
	RequestID string `json:"requestId"`
	BidID     string `json:"bidId"`
	Seat      string `json:"seat"`
	Gate      string `json:"gate"`
	Reason    string `json:"reason"`
}

// inputReport is one malformed input.
type inputReport struct {
	seq     int
	Where   string `json:"where"`
	Problem string `json:"problem"`
}

func newReplayReport(baseConfig bool) *replayReport {
	r := &replayReport{BaselineKind: "capture", Baseline: newTally(), Candidate: newTally()}
	if baseConfig {
		r.BaselineKind = "config"
	}
	return r
}

func newTally() tally {
	return tally{ByGate: map[string]int{}, BySeat: map[string]int{}, names: map[string]string{}}
}

// add counts one pair's verdicts; seat and gate names are copied, the
// verdicts may point into an Eval or the input's buffer.
func (t *tally) add(vs []bidVerdict, responseFailed bool) {
	t.Pairs++
	t.BidsJudged += len(vs)
	if responseFailed {
		t.ResponsesRejected++
	}
	for i := range vs {
		if !vs[i].failed {
			continue
		}
		t.BidsRejected++
		t.ByGate[t.name(vs[i].gate)]++
		t.BySeat[t.name(seatName(vs[i].seat))]++
	}
}

func seatName(s string) string {
	if s == "" {
		return "(no seat)"
	}
	return s
}

// name is k as a map key: a copy made once. Never index a map for
// assignment with k itself: assigning to an existing key replaces the stored
// key with the new string, which may point into memory reused later.
func (t *tally) name(k string) string {
	s, ok := t.names[k]
	if !ok {
		s = strings.Clone(k)
		t.names[s] = s
	}
	return s
}

func (t *tally) merge(o tally) {
	t.Pairs += o.Pairs
	t.BidsJudged += o.BidsJudged
	t.BidsRejected += o.BidsRejected
	t.ResponsesRejected += o.ResponsesRejected
	for k, v := range o.ByGate {
		t.ByGate[k] += v
	}
	for k, v := range o.BySeat {
		t.BySeat[k] += v
	}
	for k, v := range o.Versions {
		if t.Versions == nil {
			t.Versions = map[string]int{}
		}
		t.Versions[k] += v
	}
}

// compare counts the bids whose verdict differs and keeps the first
// examples (workers keep their first; finish keeps the first of all).
func (r *replayReport) compare(it *replayItem, reqID string, base, cand []bidVerdict, keep int) {
	for i := range cand {
		b, c := &base[i], &cand[i]
		if b.failed == c.failed {
			continue
		}
		failing, list, n := c, &r.NewlyRejectedExamples, &r.NewlyRejected
		if b.failed {
			failing, list, n = b, &r.NewlyPassedExamples, &r.NewlyPassed
		}
		*n++
		if len(*list) < keep {
			*list = append(*list, bidExample{seq: it.seq, bid: i, Where: it.where(), RequestID: reqID,
				BidID: strings.Clone(c.id), Seat: strings.Clone(c.seat), Gate: failing.gate, Reason: strings.Clone(failing.reason)})
		}
	}
}

func (r *replayReport) malformedAt(it *replayItem, err error) {
	r.Malformed++
	r.MalformedExamples = append(r.MalformedExamples, inputReport{seq: it.seq, Where: it.where(), Problem: oneLine(err)})
	if len(r.MalformedExamples) > 64 {
		r.MalformedExamples = r.MalformedExamples[:64]
	}
}

func (r *replayReport) merge(o *replayReport) {
	r.Pairs += o.Pairs
	r.Malformed += o.Malformed
	r.Unmatched += o.Unmatched
	r.Baseline.merge(o.Baseline)
	r.Candidate.merge(o.Candidate)
	r.NewlyRejected += o.NewlyRejected
	r.NewlyPassed += o.NewlyPassed
	r.NewlyRejectedExamples = append(r.NewlyRejectedExamples, o.NewlyRejectedExamples...)
	r.NewlyPassedExamples = append(r.NewlyPassedExamples, o.NewlyPassedExamples...)
	r.MalformedExamples = append(r.MalformedExamples, o.MalformedExamples...)
}

// finish orders the examples by input, keeps the first n of each list and
// computes the differences.
func (r *replayReport) finish(n int) {
	firstBids := func(l []bidExample) []bidExample {
		sort.Slice(l, func(i, j int) bool {
			if l[i].seq != l[j].seq {
				return l[i].seq < l[j].seq
			}
			return l[i].bid < l[j].bid
		})
		return append([]bidExample{}, l[:min(n, len(l))]...)
	}
	r.NewlyRejectedExamples = firstBids(r.NewlyRejectedExamples)
	r.NewlyPassedExamples = firstBids(r.NewlyPassedExamples)
	sort.Slice(r.MalformedExamples, func(i, j int) bool { return r.MalformedExamples[i].seq < r.MalformedExamples[j].seq })
	r.MalformedExamples = append([]inputReport{}, r.MalformedExamples[:min(n, len(r.MalformedExamples))]...)
	if r.Baseline.Pairs == 0 && r.BaselineKind == "capture" {
		r.BaselineKind = "none"
	}
	d := &r.Difference
	d.BidsRejected = r.Candidate.BidsRejected - r.Baseline.BidsRejected
	d.ByGate, d.BySeat = diff(r.Baseline.ByGate, r.Candidate.ByGate), diff(r.Baseline.BySeat, r.Candidate.BySeat)
}

// diff is cand - base for every key of either, zeros left out.
func diff(base, cand map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range cand {
		d[k] += v
	}
	for k, v := range base {
		d[k] -= v
	}
	for k, v := range d {
		if v == 0 {
			delete(d, k)
		}
	}
	return d
}

func writeReplayJSON(w io.Writer, r *replayReport) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeReplayText prints the report for people: totals, rejections per
// gate and per seat under both sides with the difference, the changed
// bids, the malformed inputs.
func writeReplayText(out io.Writer, r *replayReport) error {
	fmt.Fprintf(out, "pairs read: %d, malformed inputs skipped: %d\n", r.Pairs, r.Malformed)
	fmt.Fprintf(out, "bids judged: %d\n", r.Candidate.BidsJudged)
	baseName := map[string]string{"config": "baseline", "capture": "captured", "none": ""}[r.BaselineKind]
	fmt.Fprintf(out, "candidate: %s (%s)\n", r.Candidate.Config, r.Candidate.Version)
	switch r.BaselineKind {
	case "config":
		fmt.Fprintf(out, "baseline: %s (%s)\n", r.Baseline.Config, r.Baseline.Version)
	case "capture":
		var vs []string
		for _, v := range sortedKeys(r.Baseline.Versions) {
			vs = append(vs, fmt.Sprintf("%s: %d", v, r.Baseline.Versions[v]))
		}
		fmt.Fprintf(out, "baseline: the verdicts recorded in the capture (%d pairs; by config version %s)\n", r.Baseline.Pairs, strings.Join(vs, ", "))
	}
	if r.Unmatched > 0 {
		fmt.Fprintf(out, "records whose verdicts do not list the decoded bids (not compared): %d\n", r.Unmatched)
	}
	gates := sortedKeys(r.Baseline.ByGate, r.Candidate.ByGate)
	seats := sortedKeys(r.Baseline.BySeat, r.Candidate.BySeat)
	width := len("responses rejected")
	for _, k := range append(gates, seats...) {
		width = max(width, len(k)+2)
	}
	row := func(name string, b, c int) {
		if r.BaselineKind == "none" {
			fmt.Fprintf(out, "  %-*s %10d\n", width, name, c)
			return
		}
		fmt.Fprintf(out, "  %-*s %10d %10d %11s\n", width, name, b, c, signed(c-b))
	}
	head := func(title string) {
		if r.BaselineKind == "none" {
			fmt.Fprintf(out, "%-*s %10s\n", width+2, title, "candidate")
			return
		}
		fmt.Fprintf(out, "%-*s %10s %10s %11s\n", width+2, title, baseName, "candidate", "difference")
	}
	head("")
	row("bids rejected", r.Baseline.BidsRejected, r.Candidate.BidsRejected)
	row("responses rejected", r.Baseline.ResponsesRejected, r.Candidate.ResponsesRejected)
	head("rejected bids by gate")
	for _, g := range gates {
		row(g, r.Baseline.ByGate[g], r.Candidate.ByGate[g])
	}
	head("rejected bids by seat")
	for _, s := range seats {
		row(s, r.Baseline.BySeat[s], r.Candidate.BySeat[s])
	}
	if r.BaselineKind != "none" {
		examples := func(what string, n int, l []bidExample) {
			fmt.Fprintf(out, "%s: %d bids", what, n)
			if len(l) > 0 {
				fmt.Fprintf(out, " (first %d)", len(l))
			}
			fmt.Fprintln(out)
			for _, e := range l {
				fmt.Fprintf(out, "  %s  request %s  bid %s  seat %s  %s: %s\n", e.Where, e.RequestID, e.BidID, seatName(e.Seat), e.Gate, e.Reason)
			}
		}
		examples("newly rejected", r.NewlyRejected, r.NewlyRejectedExamples)
		examples("newly passed", r.NewlyPassed, r.NewlyPassedExamples)
	}
	printMalformed(out, r)
	return nil
}

func printMalformed(out io.Writer, r *replayReport) {
	if r.Malformed == 0 {
		return
	}
	fmt.Fprintf(out, "malformed inputs skipped: %d", r.Malformed)
	if len(r.MalformedExamples) > 0 {
		fmt.Fprintf(out, " (first %d)", len(r.MalformedExamples))
	}
	fmt.Fprintln(out)
	for _, m := range r.MalformedExamples {
		fmt.Fprintf(out, "  %s: %s\n", m.Where, m.Problem)
	}
}

// chartBar is one bar pair of the HTML chart.
type chartBar struct {
	Gate                string
	Y, BaseW, CandW     int
	TextY               int
	Baseline, Candidate int
}

// writeReplayHTML writes a self-contained page: the totals, an inline SVG
// bar chart of rejected bids per gate under both sides, and the tables.
func writeReplayHTML(path string, r *replayReport) error {
	gates := sortedKeys(r.Baseline.ByGate, r.Candidate.ByGate)
	most := 1
	for _, g := range gates {
		most = max(most, r.Baseline.ByGate[g], r.Candidate.ByGate[g])
	}
	const rowH, barW = 34, 520
	bars := make([]chartBar, len(gates))
	for i, g := range gates {
		b, c := r.Baseline.ByGate[g], r.Candidate.ByGate[g]
		bars[i] = chartBar{Gate: g, Y: 10 + i*rowH, TextY: 10 + i*rowH + 20, Baseline: b, Candidate: c,
			BaseW: b * barW / most, CandW: c * barW / most}
	}
	data := struct {
		R      *replayReport
		Bars   []chartBar
		Height int
		Gates  []string
		Seats  []string
	}{r, bars, 20 + len(gates)*rowH, gates, sortedKeys(r.Baseline.BySeat, r.Candidate.BySeat)}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := replayPage.Execute(f, data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

var replayPage = template.Must(template.New("replay").Funcs(template.FuncMap{
	"sub":  func(a, b int) int { return a - b },
	"add":  func(a, b int) int { return a + b },
	"sign": signed,
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>bidguard replay</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}.base{fill:#999}.cand{fill:#c33}</style>
</head><body>
<h1>bidguard replay</h1>
<p>{{.R.Pairs}} pairs, {{.R.Candidate.BidsJudged}} bids judged, {{.R.Malformed}} malformed inputs skipped.
Candidate: {{.R.Candidate.Config}} ({{.R.Candidate.Version}}).
Baseline: {{if eq .R.BaselineKind "config"}}{{.R.Baseline.Config}} ({{.R.Baseline.Version}}){{else if eq .R.BaselineKind "capture"}}the verdicts recorded in the capture{{else}}none{{end}}.</p>
<h2>Rejected bids per gate</h2>
<svg xmlns="http://www.w3.org/2000/svg" width="900" height="{{.Height}}" role="img" aria-label="rejected bids per gate, baseline and candidate">
{{range .Bars}}<text x="0" y="{{.TextY}}" font-size="12">{{.Gate}}</text>
<rect class="base" x="200" y="{{.Y}}" width="{{.BaseW}}" height="13"><title>baseline {{.Baseline}}</title></rect>
<rect class="cand" x="200" y="{{add .Y 14}}" width="{{.CandW}}" height="13"><title>candidate {{.Candidate}}</title></rect>
<text x="{{add .CandW 206}}" y="{{add .Y 25}}" font-size="11">{{.Baseline}} → {{.Candidate}}</text>
{{end}}</svg>
<p><svg width="12" height="12"><rect class="base" width="12" height="12"/></svg> baseline
<svg width="12" height="12"><rect class="cand" width="12" height="12"/></svg> candidate</p>
<h2>Totals</h2>
<table><tr><th></th><th>baseline</th><th>candidate</th><th>difference</th></tr>
<tr><td>bids rejected</td><td>{{.R.Baseline.BidsRejected}}</td><td>{{.R.Candidate.BidsRejected}}</td><td>{{sign .R.Difference.BidsRejected}}</td></tr>
<tr><td>responses rejected</td><td>{{.R.Baseline.ResponsesRejected}}</td><td>{{.R.Candidate.ResponsesRejected}}</td><td>{{sign (sub .R.Candidate.ResponsesRejected .R.Baseline.ResponsesRejected)}}</td></tr>
<tr><td>newly rejected bids</td><td></td><td>{{.R.NewlyRejected}}</td><td></td></tr>
<tr><td>newly passed bids</td><td></td><td>{{.R.NewlyPassed}}</td><td></td></tr></table>
<h2>Rejected bids per seat</h2>
<table><tr><th>seat</th><th>baseline</th><th>candidate</th><th>difference</th></tr>
{{range .Seats}}<tr><td>{{.}}</td><td>{{index $.R.Baseline.BySeat .}}</td><td>{{index $.R.Candidate.BySeat .}}</td><td>{{sign (index $.R.Difference.BySeat .)}}</td></tr>
{{end}}</table>
<h2>Changed bids</h2>
<table><tr><th>input</th><th>request</th><th>bid</th><th>seat</th><th>now</th><th>gate</th><th>reason</th></tr>
{{range .R.NewlyRejectedExamples}}<tr><td>{{.Where}}</td><td>{{.RequestID}}</td><td>{{.BidID}}</td><td>{{.Seat}}</td><td>rejected</td><td>{{.Gate}}</td><td>{{.Reason}}</td></tr>
{{end}}{{range .R.NewlyPassedExamples}}<tr><td>{{.Where}}</td><td>{{.RequestID}}</td><td>{{.BidID}}</td><td>{{.Seat}}</td><td>passed</td><td>{{.Gate}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>
</body></html>
`))

// signed is a difference: +n, -n or 0.
func signed(v int) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%+d", v)
}
