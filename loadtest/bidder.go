package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"slices"
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

// defaultTmax is the tmax assumed for a request without one (docs/design.md,
// deadline.defaultTmaxMs).
const defaultTmax = 200 * time.Millisecond

// bidderOptions are the flags of `loadtest bidder`.
type bidderOptions struct {
	listen, latency, kinds, countsOut, sample string
	tlsListen, tlsCert, tlsKey, tlsClientCA   string
	jump, bids, seatsPerResp                  string
	late, bad, nobid                          float64
	priceMedian, priceSigma                   float64
	seed                                      uint64
	lateBy, idle                              time.Duration
	seats                                     int
	allowRemote, listKinds                    bool
}

// maxSeats bounds -seats (and `loadtest seats -n`).
const maxSeats = 1_000_000

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
	fs.IntVar(&o.seats, "seats", 2, "the seat pool: seat-00001 .. seat-N (at most 1,000,000)")
	fs.StringVar(&o.seatsPerResp, "seats-per-response", "all", "seats per answer: all (as many as bids, up to -seats), N, A-B (uniform) or geo:MEAN; consecutive seats of the pool from a random one")
	fs.StringVar(&o.bids, "bids", "imps", "bids per answer: imps (one per imp it can bid on), N, A-B (uniform) or geo:MEAN (geometric, 1 most likely); spread over the imps in turn")
	fs.Float64Var(&o.priceMedian, "price-median", 1.5, "valid bids' median price, as a multiple of the imp's floor (or per-second floor × dur; 1 without either)")
	fs.Float64Var(&o.priceSigma, "price-sigma", 0.3, "spread of valid prices: the standard deviation of ln(price/median); 0 = every bid at the median; prices stay within [floor, 50 × floor]")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed of prices, bid counts, seats and the bad-bid mix (answer n and bid n draw from (seed, n))")
	fs.StringVar(&o.jump, "jump", "", "seat-N:FACTOR@AFTER: from AFTER after start on, seat-N's valid bids are priced FACTOR times higher (for the anomaly detector)")
	fs.DurationVar(&o.idle, "idle-timeout", 60*time.Second, "close keep-alive connections idle this long (Node.js bidders: 5s)")
	fs.StringVar(&o.countsOut, "counts-out", "", "write the counts (as GET /counts) to this file at exit")
	fs.StringVar(&o.sample, "sample", "", "write a request and a response per kind into this directory (for bidguard check) and exit")
	fs.BoolVar(&o.listKinds, "list-kinds", false, "list the bad-bid kinds, the gate each one targets and the gate option it needs, and exit")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback -listen address")
	fs.StringVar(&o.tlsListen, "tls-listen", "", "also serve bid requests over TLS on this address (loopback unless -allow-remote; needs -tls-cert and -tls-key)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM server certificate (chain) of -tls-listen")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of -tls-cert")
	fs.StringVar(&o.tlsClientCA, "tls-client-ca", "", "PEM CA certificates: TLS clients must present a certificate one of them signed")
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
	for _, addr := range []string{o.listen, o.tlsListen} {
		if addr == "" {
			continue
		}
		if err := checkListen(addr, o.allowRemote); err != nil {
			fmt.Fprintf(stderr, "bidder: %v\n", err)
			return 2
		}
	}
	tlsCfg, err := bidderTLS(o)
	if err != nil {
		fmt.Fprintf(stderr, "bidder: %v\n", err)
		return 2
	}
	// Both listeners listen before either serves: once GET /counts
	// answers, the TLS address accepts too.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintf(stderr, "bidder: %v\n", err)
		return 1
	}
	var tln net.Listener
	if tlsCfg != nil {
		if tln, err = net.Listen("tcp", o.tlsListen); err != nil {
			_ = ln.Close()
			fmt.Fprintf(stderr, "bidder: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "loadtest bidder on http://%s (counts: GET %s; -bids %s, -seats %d, -seats-per-response %s)\n",
		ln.Addr(), countsPath, o.bids, o.seats, o.seatsPerResp)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := bd.server(o.idle)
	errc := make(chan error, 2)
	if tln != nil {
		fmt.Fprintf(stdout, "loadtest bidder on https://%s (client certificate required: %v)\n", tln.Addr(), tlsCfg.ClientCAs != nil)
		go func() { errc <- srv.Serve(tls.NewListener(tln, tlsCfg)) }()
	}
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

// bidderTLS is the TLS configuration of -tls-listen (nil without it):
// the server certificate, and with -tls-client-ca a client certificate
// that CA signed is required. The TLS flags go together.
func bidderTLS(o bidderOptions) (*tls.Config, error) {
	if o.tlsListen == "" {
		if o.tlsCert != "" || o.tlsKey != "" || o.tlsClientCA != "" {
			return nil, errors.New("-tls-cert, -tls-key and -tls-client-ca need -tls-listen")
		}
		return nil, nil
	}
	if o.tlsCert == "" || o.tlsKey == "" {
		return nil, errors.New("-tls-listen needs -tls-cert and -tls-key")
	}
	pair, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if o.tlsClientCA != "" {
		pem, err := os.ReadFile(o.tlsClientCA)
		if err != nil {
			return nil, fmt.Errorf("-tls-client-ca: %w", err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-client-ca: %s holds no PEM certificate", o.tlsClientCA)
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
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
	shape       bidShape
	lat         latencyDist
	late, nobid float64
	lateBy      time.Duration
	serial      atomic.Uint64 // bid and answer serial numbers
	answers     atomic.Uint64 // answers drawn: answer n's draws are seeded with (seed, n)
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
	b      *builder // b.sent: the tags of the bids built, counted once the answer leaves
	buf    []byte
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
	if o.seats < 1 || o.seats > maxSeats {
		return nil, fmt.Errorf("-seats must be in 1..%d", maxSeats)
	}
	shape := bidShape{seats: o.seats}
	if shape.bids, err = parseCountDist(o.bids, "imps"); err != nil {
		return nil, fmt.Errorf("-bids %w", err)
	}
	if shape.seatsPerResp, err = parseCountDist(o.seatsPerResp, "all"); err != nil {
		return nil, fmt.Errorf("-seats-per-response %w", err)
	}
	noise, err := newPriceNoise(o.priceMedian, o.priceSigma, o.seed)
	if err != nil {
		return nil, err
	}
	selected, err := selectKinds(o.kinds)
	if err != nil {
		return nil, err
	}
	bd := &bidder{mix: newMix(o.bad, selected), shape: shape, lat: lat, late: o.late, nobid: o.nobid, lateBy: o.lateBy,
		tags:      map[string]*atomic.Int64{tagOK: {}, tagLate: {}},
		fallbacks: map[string]*atomic.Int64{}, gates: map[string]string{}}
	for _, k := range kinds {
		bd.tags[k.tag] = new(atomic.Int64)
		bd.fallbacks[k.name] = new(atomic.Int64)
		bd.gates[k.tag] = k.gate
	}
	jump, err := parseJump(o.jump, time.Now())
	if err != nil {
		return nil, err
	}
	bd.statePool.New = func() any {
		b := newBuilder(&bd.serial, noise, o.seats)
		b.jump, b.fallback = jump, bd.fallback
		return &bidderState{b: b}
	}
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
	st.buf = st.buf[:0]
	if rand.Float64() >= bd.nobid {
		st.b.seed(bd.answers.Add(1))
		bd.shape.layout(&st.info, &st.plan, st.b.rng)
		bd.mix.draw(&st.info, &st.plan, st.b.rng, bd.fallback)
		st.buf = st.b.build(st.buf, &st.info, &st.plan)
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
	for _, tag := range st.b.sent {
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
	fmt.Fprintln(tw, "KIND\tGATE\tLEVEL\tIN -kinds default\tGATE OPTION NEEDED")
	for _, k := range kinds {
		level := "bid"
		if k.response {
			level = "response"
		}
		in := "yes"
		if k.pending {
			in = "no (gate not in the embedded policy yet)"
		}
		needs := k.needs
		if needs == "" {
			needs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.name, k.gate, level, in, needs)
	}
	_ = tw.Flush()
}

// sampleRequest is the display request of -sample: generated, with every
// feature a kind may need (a floor, bcat, badv, bapp, battr, secure imps, a
// fixed banner size, child-directed, DSA required) on four imps.
func sampleRequest() ([]byte, error) {
	reqs, err := generateRequests(genOptions{count: 1, impsLo: 4, impsHi: 4, tmaxLo: 120, tmaxHi: 120, coppa: 1, dsa: 1, seed: 7})
	if err != nil {
		return nil, err
	}
	return reqs[0], nil
}

// sampleCTVRequest is the CTV request of -sample: every ad break shape
// the generator makes (a structured, a dynamic and a hybrid pod, a video
// imp outside any pod) on seven imps.
func sampleCTVRequest() ([]byte, error) {
	reqs, err := generateRequests(genOptions{count: 1, impsLo: 7, impsHi: 7, tmaxLo: 300, tmaxHi: 300, ctv: 1, seed: 7})
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
// first it applies to). The answer has one bid per imp the bidder can bid
// on, over seat-00001 and seat-00002, prices at 1.5 × the floor.
func samplePairOn(body []byte, k *kind, imp int) ([]byte, error) {
	var (
		p    fastjson.Parser
		info reqInfo
		pl   plan
	)
	if err := info.parse(&p, body); err != nil {
		return nil, err
	}
	b := newBuilder(new(atomic.Uint64), priceNoise{median: 1.5}, 2)
	b.seed(0)
	shape := bidShape{seats: 2}
	shape.layout(&info, &pl, b.rng)
	pl.seatStart = 0
	if k != nil && k.response {
		if !k.applies(&info, nil) {
			return nil, fmt.Errorf("kind %s does not apply to the request", k.name)
		}
		pl.resp = k
	} else if k != nil {
		j := slices.IndexFunc(pl.slots, func(s slot) bool {
			return (imp < 0 || s.imp == imp) && k.applies(&info, &info.imps[s.imp])
		})
		if j < 0 {
			return nil, fmt.Errorf("kind %s applies to no imp %d of the request", k.name, imp)
		}
		pl.slots[j].kind = k
	}
	out := b.build(nil, &info, &pl)
	if len(out) == 0 {
		return nil, errors.New("no bid for the request")
	}
	return out, nil
}

// writeSamples writes, for ok, ok-ctv and every kind, <name>.request.json
// and <name>.response.json into dir, and kinds.json (kind → gate). A kind
// goes on the display request, else (video and pod kinds) on the CTV one.
func writeSamples(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	display, err := sampleRequest()
	if err != nil {
		return err
	}
	ctv, err := sampleCTVRequest()
	if err != nil {
		return err
	}
	write := func(name string, req, resp []byte) error {
		if err := os.WriteFile(filepath.Join(dir, name+".request.json"), req, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".response.json"), resp, 0o644)
	}
	gates := map[string]string{tagOK: "", tagOK + "-ctv": ""}
	for name, req := range map[string][]byte{tagOK: display, tagOK + "-ctv": ctv} {
		resp, err := samplePair(req, nil)
		if err != nil {
			return err
		}
		if err := write(name, req, resp); err != nil {
			return err
		}
	}
	for _, k := range kinds {
		req := display
		resp, err := samplePair(req, k)
		if err != nil {
			req = ctv
			if resp, err = samplePair(req, k); err != nil {
				return err
			}
		}
		if err := write(k.name, req, resp); err != nil {
			return err
		}
		gates[k.name] = k.gate
	}
	data, _ := json.MarshalIndent(gates, "", "  ")
	return os.WriteFile(filepath.Join(dir, "kinds.json"), append(data, '\n'), 0o644)
}
