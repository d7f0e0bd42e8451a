package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/pool"
)

// replayExamples is how many newly rejected and newly passed bids, and
// malformed inputs, a report lists by default.
const replayExamples = 5

// runReplay is `bidguard replay`: every captured pair (or pair of a
// directory) judged under --config and, when given, --baseline; without
// --baseline a capture's own verdicts are the baseline. Exit 0 with a
// report, 2 on bad input: bad flags, a config that does not load, an input
// that cannot be opened, or inputs without one readable pair.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay")
	cfgPath := fs.String("config", "", "the candidate config (required)")
	basePath := fs.String("baseline", "", "the config to compare with (default: the verdicts recorded in the capture)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	htmlPath := fs.String("html", "", "also write an HTML report with a chart of rejections per gate to FILE")
	examples := fs.Int("examples", replayExamples, "bids listed as newly rejected and newly passed, and malformed inputs listed")
	fail := func(where string, err error) int {
		fmt.Fprintf(stderr, "%s: %s\n", where, oneLine(err))
		return 2
	}
	if code, ok := parseFlags(fs, args, true, stdout, stderr); !ok {
		return code
	}
	switch {
	case *cfgPath == "":
		return fail("replay", errors.New("--config is required"))
	case fs.NArg() == 0:
		return fail("replay", errors.New("no capture file or pair directory given"))
	case *examples < 0:
		return fail("replay", errors.New("--examples must be >= 0"))
	}
	cand, err := loadSnapshot(*cfgPath)
	if err != nil {
		return fail(*cfgPath, err)
	}
	var base *engine.Snapshot
	if *basePath != "" {
		if base, err = loadSnapshot(*basePath); err != nil {
			return fail(*basePath, err)
		}
	}
	if err := checkInputs(fs.Args()); err != nil {
		return fail("replay", err)
	}
	r := replayer{cand: cand, base: base, examples: *examples, progress: stderr}
	rep := r.run(fs.Args())
	rep.Candidate.Config, rep.Candidate.Version = *cfgPath, cand.Version
	if base != nil {
		rep.Baseline.Config, rep.Baseline.Version = *basePath, base.Version
	}
	if rep.Pairs == 0 {
		printMalformed(stderr, rep)
		return fail("replay", fmt.Errorf("no pair could be read (%d malformed)", rep.Malformed))
	}
	if *htmlPath != "" {
		if err := writeReplayHTML(*htmlPath, rep); err != nil {
			return fail(*htmlPath, err)
		}
	}
	if *asJSON {
		err = writeReplayJSON(stdout, rep)
	} else {
		err = writeReplayText(stdout, rep)
	}
	if err != nil {
		return fail("replay", err)
	}
	return 0
}

// replayer runs the pairs through the engine on every core.
type replayer struct {
	cand, base *engine.Snapshot // base nil: the capture's verdicts are the baseline
	examples   int
	progress   io.Writer // a progress line for runs over a second; nil: none
}

// run replays every input and merges the workers' reports.
func (r *replayer) run(paths []string) *replayReport {
	items := make(chan *replayItem, 256)
	go readInputs(paths, items)
	n := runtime.GOMAXPROCS(0)
	workers := make([]*replayWorker, n)
	var wg sync.WaitGroup
	var done sync.WaitGroup
	progress := make(chan int, n*4)
	done.Add(1)
	go r.showProgress(progress, &done)
	for i := range workers {
		w := newReplayWorker(r)
		workers[i] = w
		wg.Go(func() {
			k := 0
			for it := range items {
				w.do(it)
				if it.buf != nil {
					pool.ReleaseBuffer(it.buf)
				}
				if k++; k == 1000 {
					progress <- k
					k = 0
				}
			}
			progress <- k
		})
	}
	wg.Wait()
	close(progress)
	done.Wait()
	rep := workers[0].rep
	for _, w := range workers[1:] {
		rep.merge(w.rep)
	}
	rep.finish(r.examples)
	return rep
}

// showProgress prints a progress line on stderr once a second after the
// first second, and ends it with a line break.
func (r *replayer) showProgress(in <-chan int, done *sync.WaitGroup) {
	defer done.Done()
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	total, shown := 0, false
	for {
		select {
		case k, ok := <-in:
			if !ok {
				if shown {
					fmt.Fprintf(r.progress, "\r%-60s\n", fmt.Sprintf("replay: %d inputs in %.1fs", total, time.Since(start).Seconds()))
				}
				return
			}
			total += k
		case <-tick.C:
			if r.progress != nil {
				el := time.Since(start).Seconds()
				fmt.Fprintf(r.progress, "\r%-60s", fmt.Sprintf("replay: %d inputs, %.0f/s", total, float64(total)/el))
				shown = true
			}
		}
	}
}

// replayWorker judges items and keeps its own report.
type replayWorker struct {
	r      *replayer
	rep    *replayReport
	cv, bv []bidVerdict
}

func newReplayWorker(r *replayer) *replayWorker {
	return &replayWorker{r: r, rep: newReplayReport(r.base != nil)}
}

// bidVerdict is one bid's verdict on one side: failed when its own
// rejection or the response's (enforced or would-be) removes it or would.
type bidVerdict struct {
	failed       bool
	id, seat     string
	gate, reason string
}

// pairInput is an item read as a pair.
type pairInput struct {
	req, resp  []byte
	upstream   string
	arrival    time.Time
	clockMs    float64
	latencyMs  float64
	hasLatency bool
	summary    *capture.Summary
}

// replayEpoch is the arrival of a pair without a recorded time (check's).
var replayEpoch = time.Unix(1_700_000_000, 0)

func (w *replayWorker) do(it *replayItem) {
	in, err := readItem(it, w.r.base == nil)
	if err != nil {
		w.rep.malformedAt(it, err)
		return
	}
	evc := engine.AcquireEval()
	defer engine.ReleaseEval(evc)
	cand, err := judgePair(evc, w.r.cand, &in)
	if err != nil {
		w.rep.malformedAt(it, err)
		return
	}
	w.cv = verdicts(w.cv[:0], evc, cand)
	w.rep.Pairs++
	w.rep.Candidate.add(w.cv, cand.Response.Failed())
	var baseOK bool
	switch {
	case w.r.base != nil:
		evb := engine.AcquireEval()
		defer engine.ReleaseEval(evb)
		out, err := judgePair(evb, w.r.base, &in)
		if err == nil {
			w.bv = verdicts(w.bv[:0], evb, out)
			w.rep.Baseline.add(w.bv, out.Response.Failed())
			baseOK = true
		}
	case in.summary != nil:
		w.bv, baseOK = summaryVerdicts(w.bv[:0], in.summary, w.cv)
		if baseOK {
			w.rep.Baseline.add(w.bv, in.summary.Response.Gate != "")
			if w.rep.Baseline.Versions == nil {
				w.rep.Baseline.Versions = map[string]int{}
			}
			w.rep.Baseline.Versions[w.rep.Baseline.name(in.summary.Config)]++
		} else {
			w.rep.Unmatched++
		}
	}
	if baseOK && len(w.bv) == len(w.cv) {
		w.rep.compare(it, requestID(evc), w.bv, w.cv, w.r.examples)
	}
}

// readItem turns an item into a pair: a capture record parsed (its verdict
// summary decoded when summary is set), or a directory's pair as read.
func readItem(it *replayItem, summary bool) (pairInput, error) {
	if it.problem != nil {
		return pairInput{}, it.problem
	}
	if it.line == nil {
		in := pairInput{req: it.req, resp: it.resp, arrival: replayEpoch, latencyMs: it.latencyMs, hasLatency: it.hasLatency}
		if it.hasClock {
			in.clockMs = it.elapsedMs
		}
		return in, nil
	}
	rec, err := capture.ParseRecord(it.line)
	if err != nil {
		return pairInput{}, err
	}
	in := pairInput{req: rec.Request, resp: rec.Response, upstream: rec.Upstream, arrival: rec.Time,
		latencyMs: rec.LatencyMs, hasLatency: rec.HasLatency, clockMs: rec.LatencyMs}
	if in.arrival.IsZero() {
		in.arrival = replayEpoch
	}
	if summary {
		if s, ok := rec.Summary(); ok {
			in.summary = &s
		}
	}
	return in, nil
}

// judgePair judges a pair under snap as serve did: the deadline from the
// request's tmax and the upstream's deadline block, the clock frozen at
// arrival plus the captured latency, the latency the latency gate sees.
func judgePair(ev *engine.Eval, snap *engine.Snapshot, in *pairInput) (*engine.Outcome, error) {
	if err := ev.DecodeRequest(in.req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	if ev.In.Request.ID == "" || len(ev.In.Request.Imp) == 0 {
		return nil, errors.New("request: no id or no imp (serve answers 400)")
	}
	if err := ev.DecodeResponse(in.resp, snap.Config.Limits.MaxBids); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	_, d := engine.DeadlineFor(upstreamDeadline(snap.Config, in.upstream), ev.In.Request.TMax, in.arrival)
	ev.SetDeadline(in.arrival, d)
	ev.In.FreezeClock(in.arrival.Add(time.Duration(math.Round(in.clockMs * float64(time.Millisecond)))))
	if in.hasLatency {
		ev.SetLatency(in.latencyMs)
	}
	return ev.Run(snap, engine.RunOptions{Upstream: in.upstream}), nil
}

// upstreamDeadline is the deadline block serve applies to upstream's
// answers: the global one with the upstream's overrides.
func upstreamDeadline(cfg *config.Config, upstream string) config.Deadline {
	for _, u := range cfg.Upstreams {
		if u.Name == upstream {
			return u.Deadline.Apply(cfg.Deadline)
		}
	}
	return cfg.Deadline
}

// verdicts appends the verdict on each decoded bid (Outcome.Bids): its own
// rejection, else the response's.
func verdicts(dst []bidVerdict, ev *engine.Eval, out *engine.Outcome) []bidVerdict {
	resp := &out.Response
	for i := range out.Bids {
		j := &out.Bids[i].Judgement
		b := &ev.In.Bids[i]
		v := bidVerdict{id: b.ID, seat: b.Seat}
		switch {
		case j.Failed():
			v.failed, v.gate, v.reason = true, j.Rejection.Name, j.Rejection.Reason
		case resp.Failed():
			v.failed, v.gate, v.reason = true, resp.Rejection.Name, resp.Rejection.Reason
		}
		dst = append(dst, v)
	}
	return dst
}

// summaryVerdicts reads a record's recorded verdicts as the baseline; ok is
// false when they do not list the bids the replay decoded.
func summaryVerdicts(dst []bidVerdict, s *capture.Summary, decoded []bidVerdict) ([]bidVerdict, bool) {
	if len(s.Bids) != len(decoded) {
		return dst, false
	}
	for i, b := range s.Bids {
		if b.ID != decoded[i].id || b.Seat != decoded[i].seat {
			return dst, false
		}
		v := bidVerdict{id: b.ID, seat: b.Seat}
		switch {
		case b.Gate != "":
			v.failed, v.gate, v.reason = true, b.Gate, b.Reason
		case s.Response.Gate != "":
			v.failed, v.gate, v.reason = true, s.Response.Gate, s.Response.Reason
		}
		dst = append(dst, v)
	}
	return dst, true
}

func requestID(ev *engine.Eval) string {
	if ev.In.Request == nil {
		return ""
	}
	return strings.Clone(ev.In.Request.ID)
}

// sortedKeys are m's keys, largest count first, then by name.
func sortedKeys(ms ...map[string]int) []string {
	seen := map[string]int{}
	for _, m := range ms {
		for k, v := range m {
			seen[k] += v
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if seen[keys[i]] != seen[keys[j]] {
			return seen[keys[i]] > seen[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
