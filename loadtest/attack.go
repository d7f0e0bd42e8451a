package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// attackOptions are the flags of `loadtest attack`.
type attackOptions struct {
	target, requests, out, label string
	metricsURL, bidderURL        string
	rate                         float64
	duration, warmup, timeout    time.Duration
	lateAfter                    time.Duration
	maxRequests                  int64
	connections                  int
	allowRemote, quiet           bool
	gen                          genOptions
	genImps, genSize, genTmax    string
}

// progressAfter is the run length from which attack prints a progress line
// every second.
const progressAfter = 3 * time.Second

func attackFlags(fs *flag.FlagSet, o *attackOptions) {
	fs.StringVar(&o.target, "target", "", "URL to POST bid requests to (loopback unless -allow-remote)")
	fs.Float64Var(&o.rate, "rate", 1000, "requests per second (open model); 0 = closed loop, as fast as -connections allow")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to send")
	fs.Int64Var(&o.maxRequests, "max-requests", 0, "stop after this many requests (0 = no limit)")
	fs.IntVar(&o.connections, "connections", 64, "keep-alive connections (each sends one request at a time)")
	fs.DurationVar(&o.warmup, "warmup", 0, "send but do not measure during this first part of -duration")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "per-request limit, counted from its due time")
	fs.DurationVar(&o.lateAfter, "late-after", time.Millisecond, "a send starting this long after its due time is late")
	fs.StringVar(&o.requests, "requests", "", "bid requests: a JSON file, a JSON-lines file or a directory of *.json (default: generated)")
	fs.IntVar(&o.gen.count, "gen-count", 100, "generated: distinct requests")
	fs.StringVar(&o.genImps, "gen-imps", "1-3", "generated: imps per request, N or A-B")
	fs.StringVar(&o.genSize, "gen-size", "0", "generated: body bytes, N or A-B (k suffix: ×1024), padded with site.keywords; 0 = unpadded")
	fs.StringVar(&o.genTmax, "gen-tmax", "100-200", "generated: tmax in ms, N or A-B")
	fs.Float64Var(&o.gen.coppa, "gen-coppa", 0.1, "generated: share of child-directed requests")
	fs.Float64Var(&o.gen.dsa, "gen-dsa", 0.1, "generated: share of requests requiring DSA transparency")
	fs.Float64Var(&o.gen.ctv, "gen-ctv", 0, "generated: share of CTV requests (an app on a TV; video imps in structured, dynamic and hybrid ad pods)")
	fs.Uint64Var(&o.gen.seed, "seed", 1, "generated: random seed")
	fs.StringVar(&o.out, "out", "-", "JSON lines output file (- = stdout)")
	fs.StringVar(&o.label, "label", "", "label written in the meta record")
	fs.StringVar(&o.metricsURL, "metrics", "", "bidguard admin /metrics URL: read before and after, the difference goes into the summary")
	fs.StringVar(&o.bidderURL, "bidder", "", "fake bidder base URL: its counts before and after go into the summary")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow non-loopback targets")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line and no summary line on stderr")
}

func runAttack(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("attack", stderr)
	var o attackOptions
	attackFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	a, err := newAttack(o)
	if err != nil {
		fmt.Fprintf(stderr, "attack: %v\n", err)
		return 2
	}
	out := stdout
	if o.out != "-" {
		f, err := os.Create(o.out)
		if err != nil {
			fmt.Fprintf(stderr, "attack: %v\n", err)
			return 1
		}
		defer f.Close()
		out = f
	}
	if !o.quiet {
		a.progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := a.run(ctx, newRecordWriter(out))
	if err != nil {
		fmt.Fprintf(stderr, "attack: %v\n", err)
		return 1
	}
	if !o.quiet {
		fmt.Fprintln(stderr, summaryLine(sum))
	}
	for _, w := range sum.Warnings {
		fmt.Fprintf(stderr, "attack: warning: %s\n", w)
	}
	if sum.Tally.OK+sum.Tally.NoBid == 0 {
		fmt.Fprintln(stderr, "attack: no request got a 2xx answer")
		return 1
	}
	return 0
}

// attack is one configured run.
type attack struct {
	o        attackOptions
	tgt      target
	raws     [][]byte // pre-built HTTP requests
	meta     Meta
	progress io.Writer // nil: silent

	start   time.Time
	conns   []*connStats
	issued  atomic.Int64 // closed model: requests started
	elapsed func() time.Duration
	period  time.Duration // between interval records: intervalPeriod
}

func newAttack(o attackOptions) (*attack, error) {
	tgt, err := parseTarget(o.target, o.allowRemote)
	if err != nil {
		return nil, err
	}
	switch {
	case o.rate < 0:
		return nil, errors.New("-rate must be >= 0")
	case o.duration <= 0:
		return nil, errors.New("-duration must be > 0")
	case o.warmup < 0 || o.warmup >= o.duration:
		return nil, errors.New("-warmup must be in [0, -duration)")
	case o.connections < 1 || o.connections > 10_000:
		return nil, errors.New("-connections must be in 1..10000")
	case o.timeout <= 0:
		return nil, errors.New("-timeout must be > 0")
	}
	for _, u := range []string{o.metricsURL, o.bidderURL} {
		if u == "" {
			continue
		}
		if _, err := parseTarget(u, o.allowRemote); err != nil {
			return nil, err
		}
	}
	bodies, source, err := attackBodies(&o)
	if err != nil {
		return nil, err
	}
	a := &attack{o: o, tgt: tgt}
	for _, b := range bodies {
		a.raws = append(a.raws, rawRequest(tgt, b))
	}
	mode := modeOpen
	if o.rate == 0 {
		mode = modeClosed
	}
	a.meta = Meta{Type: recMeta, Label: o.label, Target: o.target, Mode: mode, Rate: o.rate, Connections: o.connections,
		DurationS: o.duration.Seconds(), WarmupS: o.warmup.Seconds(), MaxRequests: o.maxRequests,
		TimeoutS: o.timeout.Seconds(), LateAfterUs: o.lateAfter.Microseconds(), Requests: len(bodies),
		RequestSize: meanSize(bodies), Source: source}
	return a, nil
}

func attackBodies(o *attackOptions) ([][]byte, string, error) {
	if o.requests != "" {
		b, err := loadRequests(o.requests)
		return b, o.requests, err
	}
	var err error
	if o.gen.impsLo, o.gen.impsHi, err = parseRange(o.genImps); err != nil {
		return nil, "", fmt.Errorf("-gen-imps: %w", err)
	}
	if o.gen.sizeLo, o.gen.sizeHi, err = parseRange(o.genSize); err != nil {
		return nil, "", fmt.Errorf("-gen-size: %w", err)
	}
	if o.gen.tmaxLo, o.gen.tmaxHi, err = parseRange(o.genTmax); err != nil {
		return nil, "", fmt.Errorf("-gen-tmax: %w", err)
	}
	b, err := generateRequests(o.gen)
	return b, "generated", err
}

// run sends the load, writes the records and returns the summary.
func (a *attack) run(ctx context.Context, rw *recordWriter) (*Summary, error) {
	var guard0 *GuardCounts
	var bidder0 *BidderCounts
	var err error
	if a.o.metricsURL != "" {
		if guard0, err = fetchGuard(a.o.metricsURL, a.o.allowRemote); err != nil {
			return nil, err
		}
	}
	if a.o.bidderURL != "" {
		if bidder0, err = fetchBidder(a.o.bidderURL, a.o.allowRemote); err != nil {
			return nil, err
		}
	}
	a.start = time.Now()
	a.meta.Start = a.start.UTC()
	a.elapsed = func() time.Duration { return time.Since(a.start) }
	if err := rw.write(a.meta); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := a.launch(ctx)

	total, totalHist := Tally{}, newHist()
	spares := make([]*hdrhistogram.Histogram, len(a.conns))
	for i := range spares {
		spares[i] = newHist()
	}
	var bids map[string]int64
	collect := func() error {
		iv := Interval{Type: recInterval, T: a.elapsed().Seconds()}
		h := newHist()
		bids = map[string]int64{}
		for i, c := range a.conns {
			got, t := c.collect(spares[i], bids)
			h.Merge(got)
			got.Reset()
			spares[i] = got
			iv.Tally.add(&t)
		}
		iv.Tally.Bids = nil // bid tags are reported once, in the summary
		total.add(&iv.Tally)
		totalHist.Merge(h)
		iv.Latency = percentiles(h)
		if iv.Hist, err = encodeHist(h); err != nil {
			return err
		}
		if a.progress != nil && a.o.duration >= progressAfter {
			fmt.Fprintln(a.progress, a.progressLine(&total, &iv))
		}
		return rw.write(iv)
	}
	a.period = intervalPeriod(a.o.duration)
	tick := time.NewTicker(a.period)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-tick.C:
		case <-done:
			running = false
		}
		if err := collect(); err != nil {
			return nil, err
		}
	}
	window := a.elapsed() - a.o.warmup
	sum := &Summary{Type: recSummary, ElapsedS: window.Seconds(), Tally: total, Latency: percentiles(totalHist)}
	sum.Tally.Bids = bids
	if window > 0 {
		sum.Throughput = float64(total.Completed) / window.Seconds()
	}
	if total.Sent > 0 {
		sum.LateShare = float64(total.Late) / float64(total.Sent)
	}
	if w := lateWarning(total.Late, total.Sent, a.o.lateAfter); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
	if ctx.Err() != nil {
		sum.Warnings = append(sum.Warnings, "interrupted before the end of the run")
	}
	if sum.Hist, err = encodeHist(totalHist); err != nil {
		return nil, err
	}
	if guard0 != nil {
		g, err := fetchGuard(a.o.metricsURL, a.o.allowRemote)
		if err != nil {
			return nil, err
		}
		sum.Guard = g.sub(guard0)
	}
	if bidder0 != nil {
		b, err := fetchBidder(a.o.bidderURL, a.o.allowRemote)
		if err != nil {
			return nil, err
		}
		sum.Bidder = b.sub(bidder0)
	}
	return sum, rw.write(sum)
}

// launch starts the connections (and the pacer in the open model) and
// returns a channel closed when every connection has finished.
func (a *attack) launch(ctx context.Context) <-chan struct{} {
	n := a.o.connections
	a.conns = make([]*connStats, n)
	var wg sync.WaitGroup
	var shots chan shot
	if a.o.rate > 0 {
		shots = make(chan shot, 4096)
		p := &pacer{sched: schedule{rate: a.o.rate, duration: a.o.duration, max: a.o.maxRequests}, now: a.elapsed}
		go func() {
			p.sleep = preciseSleeper()
			p.run(shots, ctx.Done())
		}()
	}
	for i := range n {
		a.conns[i] = newConnStats()
		c := &client{addr: a.tgt.addr}
		wg.Go(func() {
			defer c.close()
			if shots != nil {
				a.openLoop(c, a.conns[i], shots)
			} else {
				a.closedLoop(ctx, c, a.conns[i])
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// openLoop sends the shots it receives. A shot that waited longer than the
// timeout for a free connection is not sent: it counts as a timeout whose
// latency is its wait.
func (a *attack) openLoop(c *client, st *connStats, shots <-chan shot) {
	for s := range shots {
		lag := a.elapsed() - s.due
		ans := answer{measured: s.due >= a.o.warmup, lagUs: lag.Microseconds(), late: lag > a.o.lateAfter}
		if lag >= a.o.timeout {
			ans.errKind, ans.latUs = errTimeout, lag.Microseconds()
		} else {
			raw := a.raws[s.seq%int64(len(a.raws))]
			ans.status, ans.body, ans.errKind = c.do(raw, a.start.Add(s.due+a.o.timeout))
			ans.latUs = (a.elapsed() - s.due).Microseconds()
		}
		st.record(&ans)
	}
}

// closedLoop sends back to back until the duration or -max-requests is
// reached, or ctx is done.
func (a *attack) closedLoop(ctx context.Context, c *client, st *connStats) {
	for ctx.Err() == nil {
		sent := a.elapsed()
		if sent >= a.o.duration {
			return
		}
		seq := a.issued.Add(1) - 1
		if a.o.maxRequests > 0 && seq >= a.o.maxRequests {
			return
		}
		ans := answer{measured: sent >= a.o.warmup}
		ans.status, ans.body, ans.errKind = c.do(a.raws[seq%int64(len(a.raws))], a.start.Add(sent+a.o.timeout))
		ans.latUs = (a.elapsed() - sent).Microseconds()
		st.record(&ans)
	}
}

func (a *attack) progressLine(total *Tally, iv *Interval) string {
	ok := 0.0
	if total.Completed > 0 {
		ok = 100 * float64(total.OK+total.NoBid) / float64(total.Completed)
	}
	late := 0.0
	if total.Sent > 0 {
		late = 100 * float64(total.Late) / float64(total.Sent)
	}
	return fmt.Sprintf("[%5.1fs/%s] %d done, %.0f/s, 2xx %.2f%%, p50 %s p99 %s max %s, late %.2f%%",
		iv.T, a.o.duration, total.Completed, float64(iv.Tally.Completed)/a.period.Seconds(), ok,
		fmtUs(iv.Latency.P50Us), fmtUs(iv.Latency.P99Us), fmtUs(iv.Latency.MaxUs), late)
}

func summaryLine(s *Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests in %.1fs: %.1f/s, 2xx %d (bid %d, no-bid %d), failed %d, late %d; latency p50 %s p90 %s p99 %s p99.9 %s max %s",
		s.Tally.Completed, s.ElapsedS, s.Throughput, s.Tally.OK+s.Tally.NoBid, s.Tally.OK, s.Tally.NoBid, s.Tally.Failed(), s.Tally.Late,
		fmtUs(s.Latency.P50Us), fmtUs(s.Latency.P90Us), fmtUs(s.Latency.P99Us), fmtUs(s.Latency.P999Us), fmtUs(s.Latency.MaxUs))
	return b.String()
}

// fmtUs writes microseconds as ms with 3 decimals below 10 ms, else fewer.
func fmtUs(us int64) string {
	ms := float64(us) / 1000
	switch {
	case ms < 10:
		return fmt.Sprintf("%.3fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.2fs", ms/1000)
}
