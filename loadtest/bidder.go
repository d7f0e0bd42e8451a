package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// countsPath is where the fake bidder serves its counts (GET).
const countsPath = "/counts"

// defaultTmax is the tmax assumed for a request without one (DESIGN.md
// deadline.defaultTmaxMs).
const defaultTmax = 200 * time.Millisecond

// bidderOptions are the flags of `loadtest bidder`.
type bidderOptions struct {
	listen, latency, kinds, countsOut, sample string
	jump                                      string
	late, bad, nobid                          float64
	lateBy, idle                              time.Duration
	seats                                     int
	allowRemote, listKinds                    bool
}

func runBidder(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bidder", stderr)
	var o bidderOptions
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9000", "address to serve bid requests on (loopback unless -allow-remote)")
	fs.StringVar(&o.latency, "latency", "0", "answer delay: D (fixed), uniform:MIN,MAX or lognormal:MEDIAN,SIGMA (capped at 10s)")
	fs.Float64Var(&o.late, "late", 0, "share of answers sent past the request's tmax (by -late-by)")
	fs.DurationVar(&o.lateBy, "late-by", 20*time.Millisecond, "how far past tmax a late answer is sent")
	fs.Float64Var(&o.nobid, "nobid", 0, "share of requests answered 204")
	fs.Float64Var(&o.bad, "bad", 0, "share of bad bids (each breaks one gate's rule: -list-kinds)")
	fs.StringVar(&o.kinds, "kinds", "default", "bad-bid kinds: default (those of the embedded default policy), all, or a comma-separated list")
	fs.IntVar(&o.seats, "seats", 2, "seatbids per answer (imps are spread over seat-1..seat-N)")
	fs.StringVar(&o.jump, "jump", "", "seat-N:FACTOR@AFTER: from AFTER after start on, seat-N's valid bids are priced FACTOR times higher (for the anomaly detector)")
	fs.DurationVar(&o.idle, "idle-timeout", 60*time.Second, "close keep-alive connections idle this long (Node.js bidders: 5s)")
	fs.StringVar(&o.countsOut, "counts-out", "", "write the counts (as GET /counts) to this file at exit")
	fs.StringVar(&o.sample, "sample", "", "write a request and a response per kind into this directory (for bidguard check) and exit")
	fs.BoolVar(&o.listKinds, "list-kinds", false, "list the bad-bid kinds and the gate each one targets, and exit")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback -listen address")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.listKinds {
		listKinds(stdout)
		return 0
	}
	if o.sample != "" {
		if err := writeSamples(o.sample); err != nil {
			fmt.Fprintf(stderr, "bidder: %v\n", err)
			return 1
		}
		return 0
	}
	bd, err := newBidder(o)
	if err != nil {
		fmt.Fprintf(stderr, "bidder: %v\n", err)
		return 2
	}
	if err := checkListen(o.listen, o.allowRemote); err != nil {
		fmt.Fprintf(stderr, "bidder: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintf(stderr, "bidder: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "loadtest bidder on http://%s (counts: GET %s)\n", ln.Addr(), countsPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := bd.server(o.idle)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	code := 0
	select {
	case <-ctx.Done():
	case err := <-errc:
		fmt.Fprintf(stderr, "bidder: %v\n", err)
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.ShutdownWithContext(sctx)
	if o.countsOut != "" {
		data, _ := json.MarshalIndent(bd.counts(), "", "  ")
		if err := os.WriteFile(o.countsOut, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "bidder: %v\n", err)
			code = 1
		}
	}
	return code
}

// latencyDist is the fake bidder's answer delay.
type latencyDist struct {
	kind  string // fixed, uniform, lognormal
	a, b  time.Duration
	sigma float64
}

// maxDelay caps a drawn delay.
const maxDelay = 10 * time.Second

func parseLatency(s string) (latencyDist, error) {
	name, args, found := strings.Cut(s, ":")
	if !found {
		name, args = "fixed", s
	}
	parts := strings.Split(args, ",")
	d := latencyDist{kind: name}
	var err error
	switch {
	case name == "fixed" && len(parts) == 1:
		d.a, err = time.ParseDuration(normDuration(parts[0]))
	case name == "uniform" && len(parts) == 2:
		if d.a, err = time.ParseDuration(normDuration(parts[0])); err == nil {
			d.b, err = time.ParseDuration(normDuration(parts[1]))
		}
		if err == nil && d.b < d.a {
			err = errors.New("MAX < MIN")
		}
	case name == "lognormal" && len(parts) == 2:
		if d.a, err = time.ParseDuration(normDuration(parts[0])); err == nil {
			_, err = fmt.Sscanf(parts[1], "%g", &d.sigma)
		}
		if err == nil && (d.sigma < 0 || d.sigma > 5) {
			err = errors.New("SIGMA must be in [0, 5]")
		}
	default:
		err = errors.New("want D, uniform:MIN,MAX or lognormal:MEDIAN,SIGMA")
	}
	if err == nil && (d.a < 0 || d.a > maxDelay || d.b > maxDelay) {
		err = fmt.Errorf("delays must be in [0, %s]", maxDelay)
	}
	if err != nil {
		return latencyDist{}, fmt.Errorf("-latency %q: %w", s, err)
	}
	return d, nil
}

// normDuration lets "0" stand for "0s".
func normDuration(s string) string {
	if s = strings.TrimSpace(s); s == "0" {
		return "0s"
	}
	return s
}

func (d latencyDist) sample() time.Duration {
	switch d.kind {
	case "uniform":
		return d.a + time.Duration(rand.Int64N(int64(d.b-d.a)+1))
	case "lognormal":
		v := float64(d.a) * math.Exp(d.sigma*rand.NormFloat64())
		return time.Duration(min(v, float64(maxDelay)))
	}
	return d.a
}

// bidder is the fake bidder. Its handler is safe for concurrent use.
type bidder struct {
	mix         *mix
	lat         latencyDist
	late, nobid float64
	lateBy      time.Duration
	serial      atomic.Uint64
	requests    atomic.Int64
	nobids      atomic.Int64
	lates       atomic.Int64
	tags        map[string]*atomic.Int64 // by tag; read-only map after newBidder
	fallbacks   map[string]*atomic.Int64 // by kind name
	gates       map[string]string        // bad tag → gate
	statePool   sync.Pool
}

// bidderState is one request's reusable state.
type bidderState struct {
	parser fastjson.Parser
	info   reqInfo
	plan   plan
	b      builder
	buf    []byte
	sent   []string // tags of the bids built, counted once the answer leaves
}

func newBidder(o bidderOptions) (*bidder, error) {
	lat, err := parseLatency(o.latency)
	if err != nil {
		return nil, err
	}
	for name, v := range map[string]float64{"-late": o.late, "-bad": o.bad, "-nobid": o.nobid} {
		if v < 0 || v > 1 {
			return nil, fmt.Errorf("%s must be a share in [0, 1]", name)
		}
	}
	if o.seats < 1 || o.seats > 100 {
		return nil, errors.New("-seats must be in 1..100")
	}
	selected, err := selectKinds(o.kinds)
	if err != nil {
		return nil, err
	}
	bd := &bidder{mix: newMix(o.bad, selected, o.seats), lat: lat, late: o.late, nobid: o.nobid, lateBy: o.lateBy,
		tags:      map[string]*atomic.Int64{tagOK: {}, tagLate: {}},
		fallbacks: map[string]*atomic.Int64{}, gates: map[string]string{}}
	for _, k := range kinds {
		bd.tags[tagBad+k.name] = new(atomic.Int64)
		bd.fallbacks[k.name] = new(atomic.Int64)
		bd.gates[tagBad+k.name] = k.gate
	}
	jump, err := parseJump(o.jump, time.Now())
	if err != nil {
		return nil, err
	}
	bd.statePool.New = func() any { return &bidderState{b: builder{serial: &bd.serial, jump: jump}} }
	return bd, nil
}

func (bd *bidder) server(idle time.Duration) *fasthttp.Server {
	return &fasthttp.Server{
		Handler: bd.handle, Name: "loadtest-bidder", IdleTimeout: idle,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaxRequestBodySize: 1 << 20, CloseOnShutdown: true, NoDefaultDate: true,
	}
}

func (bd *bidder) fallback(k *kind) { bd.fallbacks[k.name].Add(1) }

func (bd *bidder) handle(ctx *fasthttp.RequestCtx) {
	if ctx.IsGet() && string(ctx.Path()) == countsPath {
		data, _ := json.Marshal(bd.counts())
		ctx.SetContentType("application/json")
		ctx.SetBody(data)
		return
	}
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return
	}
	st := bd.statePool.Get().(*bidderState)
	defer bd.statePool.Put(st)
	if err := st.info.parse(&st.parser, ctx.PostBody()); err != nil {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBodyString("malformed bid request\n")
		return
	}
	bd.requests.Add(1)
	tmax := defaultTmax
	if st.info.tmaxMs > 0 {
		tmax = time.Duration(st.info.tmaxMs) * time.Millisecond
	}
	delay := bd.lat.sample()
	st.plan.late = rand.Float64() < bd.late
	if st.plan.late {
		delay = tmax + bd.lateBy
	} else if delay >= tmax {
		st.plan.late = true
	}
	st.sent = st.sent[:0]
	st.buf = st.buf[:0]
	if rand.Float64() >= bd.nobid {
		bd.mix.draw(&st.info, &st.plan, bd.fallback)
		st.buf = st.b.build(st.buf, &st.info, &st.plan, bd.mix.seats, func(tag string) { st.sent = append(st.sent, tag) })
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if st.plan.late {
		bd.lates.Add(1)
	}
	if len(st.buf) == 0 {
		bd.nobids.Add(1)
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	for _, tag := range st.sent {
		bd.tags[tag].Add(1)
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(st.buf)
}

// counts returns a snapshot of what was sent.
func (bd *bidder) counts() *BidderCounts {
	c := &BidderCounts{Requests: bd.requests.Load(), NoBid: bd.nobids.Load(), Late: bd.lates.Load(),
		Bids: map[string]int64{}, Fallbacks: map[string]int64{}, Gates: bd.gates}
	for tag, n := range bd.tags {
		c.Bids[tag] = n.Load()
	}
	for k, n := range bd.fallbacks {
		if v := n.Load(); v > 0 {
			c.Fallbacks[k] = v
		}
	}
	return c
}

func listKinds(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tGATE\tLEVEL\tIN -kinds default")
	for _, k := range kinds {
		level := "bid"
		if k.response {
			level = "response"
		}
		in := "yes"
		if k.pending {
			in = "no (gate not in the embedded policy yet)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.name, k.gate, level, in)
	}
	_ = tw.Flush()
}

// sampleRequest is the request of -sample: generated, with every feature a
// kind may need (a floor, bcat, badv, bapp, battr, secure imps, a fixed
// banner size, child-directed, DSA required) on four imps.
func sampleRequest() ([]byte, error) {
	reqs, err := generateRequests(genOptions{count: 1, impsLo: 4, impsHi: 4, tmaxLo: 120, tmaxHi: 120, coppa: 1, dsa: 1, seed: 7})
	if err != nil {
		return nil, err
	}
	return reqs[0], nil
}

// samplePair returns the answer to body with one bid (or the response) of
// kind k, the other bids valid; k nil: every bid valid. A bid kind goes on
// the first imp it applies to.
func samplePair(body []byte, k *kind) ([]byte, error) {
	return samplePairOn(body, k, -1)
}

// samplePairOn is samplePair with a bid kind on imp number imp (-1: the
// first it applies to).
func samplePairOn(body []byte, k *kind, imp int) ([]byte, error) {
	var (
		p    fastjson.Parser
		info reqInfo
		pl   plan
	)
	if err := info.parse(&p, body); err != nil {
		return nil, err
	}
	pl.bids = make([]*kind, len(info.imps))
	if k != nil && k.response {
		if !k.applies(&info, nil) {
			return nil, fmt.Errorf("kind %s does not apply to the request", k.name)
		}
		pl.resp = k
	} else if k != nil {
		i := imp
		if i < 0 {
			i = 0
			for i < len(info.imps) && !k.applies(&info, &info.imps[i]) {
				i++
			}
		}
		if i >= len(info.imps) || !k.applies(&info, &info.imps[i]) {
			return nil, fmt.Errorf("kind %s applies to no imp %d of the request", k.name, imp)
		}
		pl.bids[i] = k
	}
	b := builder{serial: new(atomic.Uint64)}
	out := b.build(nil, &info, &pl, 2, func(string) {})
	if len(out) == 0 {
		return nil, errors.New("no bid for the request")
	}
	return out, nil
}

// writeSamples writes, for ok and every kind, <name>.request.json and
// <name>.response.json into dir, and kinds.json (kind → gate).
func writeSamples(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	req, err := sampleRequest()
	if err != nil {
		return err
	}
	gates := map[string]string{tagOK: ""}
	for _, k := range append([]*kind{nil}, kinds...) {
		name := tagOK
		if k != nil {
			name, gates[k.name] = k.name, k.gate
		}
		resp, err := samplePair(req, k)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".request.json"), req, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".response.json"), resp, 0o644); err != nil {
			return err
		}
	}
	data, _ := json.MarshalIndent(gates, "", "  ")
	return os.WriteFile(filepath.Join(dir, "kinds.json"), append(data, '\n'), 0o644)
}
