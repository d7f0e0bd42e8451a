package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// compareOptions are the flags of `benchrun compare`.
type compareOptions struct {
	bin, out, requests, rates, bidderLatency string
	baseline                                 string // an earlier bidguard binary, measured as tBaseline
	rounds, connections                      int
	duration, warmup                         time.Duration
	quick                                    bool
}

// mode is one measurement: closed loop (rate 0) or a constant rate.
type mode struct {
	name string
	rate int
}

func (m mode) title(conns int) string {
	if m.rate == 0 {
		return fmt.Sprintf("closed loop, %d connections (maximum throughput)", conns)
	}
	return fmt.Sprintf("open loop, %d requests/s (latency from scheduled send times)", m.rate)
}

func parseModes(rates string) ([]mode, error) {
	modes := []mode{{name: "closed"}}
	for _, r := range strings.Split(rates, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		n, err := strconv.Atoi(r)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-rates: %q is not a positive integer", r)
		}
		modes = append(modes, mode{name: "open-" + r, rate: n})
	}
	return modes, nil
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", stderr)
	var o compareOptions
	fs.StringVar(&o.bin, "bin", "bin", "directory holding bidguard and loadtest (make build)")
	fs.StringVar(&o.out, "out", "bench/out", "directory for the results, the table and the plots")
	fs.StringVar(&o.requests, "requests", "gates/testdata/typical-request.json", "bid requests sent (loadtest attack -requests)")
	fs.StringVar(&o.rates, "rates", "1000,2000,5000", "open-loop rates, requests/s (comma-separated)")
	fs.StringVar(&o.bidderLatency, "bidder-latency", "0", "the fake bidder's -latency")
	fs.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (medians are reported)")
	fs.IntVar(&o.connections, "connections", 64, "connections of every attack")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "length of each attack")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "unmeasured start of each attack")
	fs.StringVar(&o.baseline, "baseline", "", "an earlier bidguard binary to measure too, as \""+tBaseline+"\" (a before/after table in one run)")
	fs.BoolVar(&o.quick, "quick", false, "1s attacks with 200ms warmup (about two minutes in all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.quick {
		o.duration, o.warmup = time.Second, 200*time.Millisecond
	}
	modes, err := parseModes(o.rates)
	if err != nil || o.rounds < 1 || o.warmup >= o.duration {
		fmt.Fprintf(stderr, "compare: bad flags: %v (want -rounds >= 1 and -warmup < -duration)\n", err)
		return 2
	}
	md, err := compare(ctx, o, modes, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, md)
	return 0
}

// newEnv prepares the binaries, the run directory and the probe request.
func newEnv(bin, out, requests string) (*env, error) {
	for _, b := range []string{"bidguard", "loadtest"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("%s/%s missing: run make build first", bin, b)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(out, "run-")
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil { // nginx resolves paths against its prefix
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // nginx workers run as another user
		return nil, err
	}
	probe, err := probeBody(requests)
	if err != nil {
		return nil, err
	}
	return &env{bin: bin, self: self, procs: &procs{dir: dir}, probe: probe}, nil
}

// probeBody is the first request of a requests file (or a generated-like
// minimal one for a directory), used to wait for readiness.
func probeBody(path string) ([]byte, error) {
	if path == "" {
		return []byte(`{"id":"probe","imp":[{"id":"1","banner":{"w":300,"h":250}}],"tmax":200}`), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if json.Valid(data) {
		return data, nil
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return []byte(line), nil
}

// compare starts everything, runs the rounds and returns the markdown
// report (also written to <out>/compare.md).
func compare(ctx context.Context, o compareOptions, modes []mode, log io.Writer) (string, error) {
	e, err := newEnv(o.bin, o.out, o.requests)
	if err != nil {
		return "", err
	}
	defer e.procs.stopAll()
	fmt.Fprintf(log, "benchrun: run directory %s\n", e.procs.dir)
	m := describeMachine()
	// The bidder serves TLS on a second port for the TLS upstream row:
	// a private CA, client certificates required.
	tlsFiles, err := writeTLSFiles(filepath.Join(e.procs.dir, "tls"))
	if err != nil {
		return "", err
	}
	tlsPort, err := freePort()
	if err != nil {
		return "", err
	}
	bidder, bidderGroup, err := e.startBidder(ctx, append([]string{"-latency", o.bidderLatency}, tlsFiles.bidderFlags(loopback(tlsPort))...)...)
	if err != nil {
		return "", err
	}
	services := []service{{name: tDirect, url: "http://" + bidder + "/bid", pgid: bidderGroup}}
	fast, err := e.startProxy(ctx, tFast, "fasthttp", bidder)
	if err != nil {
		return "", err
	}
	services = append(services, fast)
	var skipped []string
	if nginx, why := findNginx(); nginx == "" {
		skipped = append(skipped, "nginx skipped: "+why)
		fmt.Fprintf(log, "benchrun: %s\n", skipped[len(skipped)-1])
	} else {
		s, err := e.startNginx(ctx, nginx, bidder)
		if err != nil {
			return "", err
		}
		services = append(services, s)
		m.nginx = nginxVersion(nginx)
	}
	std, err := e.startProxy(ctx, tHTTPUtil, "httputil", bidder)
	if err != nil {
		return "", err
	}
	services = append(services, std)
	if o.baseline != "" {
		base, _, err := e.startBidguard(ctx, tBaseline, o.baseline, plainUpstream(bidder))
		if err != nil {
			return "", fmt.Errorf("-baseline: %w", err)
		}
		services = append(services, base)
	}
	bg, _, err := e.startBidguard(ctx, tBidguard, filepath.Join(e.bin, "bidguard"), plainUpstream(bidder))
	if err != nil {
		return "", err
	}
	services = append(services, bg)
	bgTLS, tlsMetrics, err := e.startBidguard(ctx, tBidguardTLS, filepath.Join(e.bin, "bidguard"),
		upstreamSpec{url: "https://" + loopback(tlsPort) + "/bid", tls: &tlsFiles})
	if err != nil {
		return "", err
	}
	services = append(services, bgTLS)

	res := results{}
	last := map[string]map[string]string{} // mode → target → the last round's file
	for round := range o.rounds {
		for _, md := range modes {
			// Rotate the order every round, so no target always runs first
			// (or right after the most expensive one).
			for i := range services {
				s := services[(i+round)%len(services)]
				file := filepath.Join(e.procs.dir, fmt.Sprintf("%s-%s-r%d.jsonl", md.name, fileName(s.name), round+1))
				fmt.Fprintf(log, "benchrun: round %d/%d %-7s %-15s ", round+1, o.rounds, md.name, s.name)
				before, cpuErr := sampleCPU(s, bidder)
				sum, err := e.attack(ctx, o, md, s, file)
				if err != nil {
					return "", err
				}
				after, err := sampleCPU(s, bidder)
				if cpuErr = errors.Join(cpuErr, err); cpuErr == nil {
					sum.setCPU(before, after)
				}
				fmt.Fprintf(log, "%8.0f req/s  p50 %s  p99 %s  CPU %s µs/req\n", sum.Throughput, ms(sum.Latency.P50), ms(sum.Latency.P99), cpuUs(sum))
				if cpuErr != nil {
					fmt.Fprintf(log, "benchrun: CPU of %s not measured: %v\n", s.name, cpuErr)
				}
				res.add(md.name, s.name, sum)
				if last[md.name] == nil {
					last[md.name] = map[string]string{}
				}
				last[md.name][s.name] = file
			}
		}
	}
	m.loadAfter = loadAvg()
	notes := skipped
	if text, err := fetchText(tlsMetrics); err != nil {
		fmt.Fprintf(log, "benchrun: %s metrics not read: %v\n", tBidguardTLS, err)
	} else {
		notes = append(notes, handshakeNote(text, o.rounds*len(modes)))
	}
	var names []string
	for _, s := range services {
		names = append(names, s.name)
	}
	cmdline := "make compare"
	if len(os.Args) > 2 {
		cmdline += " COMPARE_ARGS='" + strings.Join(os.Args[2:], " ") + "'"
	}
	md := renderReport(m, cmdline, o, modes, names, res, notes)
	if err := os.WriteFile(filepath.Join(o.out, "compare.md"), []byte(md), 0o644); err != nil {
		return "", err
	}
	for _, mo := range modes {
		var files []string
		for _, n := range names {
			files = append(files, last[mo.name][n])
		}
		page := filepath.Join(o.out, "compare-"+mo.name+".html")
		argv := append([]string{"report", "-compare", "-html", page}, files...)
		if out, err := exec.CommandContext(ctx, filepath.Join(o.bin, "loadtest"), argv...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("loadtest report: %v: %s", err, out)
		}
	}
	fmt.Fprintf(log, "benchrun: table in %s, plots in %s/compare-*.html, raw results in %s\n", filepath.Join(o.out, "compare.md"), o.out, e.procs.dir)
	return md, nil
}

// attack runs one `loadtest attack` and reads its summary.
func (e *env) attack(ctx context.Context, o compareOptions, md mode, s service, file string) (*attackSummary, error) {
	argv := []string{"attack", "-target", s.url, "-rate", strconv.Itoa(md.rate), "-duration", o.duration.String(),
		"-warmup", o.warmup.String(), "-connections", strconv.Itoa(o.connections), "-out", file, "-quiet", "-label", s.name}
	if o.requests != "" {
		argv = append(argv, "-requests", o.requests)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "loadtest"), argv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// An attack that ran to the end but got no 2xx answer still has a
		// summary: its errors belong in the table, not in an abort.
		if sum, rerr := readSummary(file); rerr == nil && ctx.Err() == nil {
			return sum, nil
		}
		return nil, fmt.Errorf("attack %s (%s): %v: %s", s.name, md.name, err, strings.TrimSpace(string(out)))
	}
	return readSummary(file)
}

// cpuSample is a target's CPU time so far and the requests the bidder has
// received so far, read just before and just after an attack.
type cpuSample struct {
	cpu      time.Duration
	requests int64
}

func sampleCPU(s service, bidder string) (cpuSample, error) {
	cpu, err := groupCPU("/proc", s.pgid)
	if err != nil {
		return cpuSample{}, err
	}
	n, err := bidderRequests(bidder)
	return cpuSample{cpu: cpu, requests: n}, err
}

// setCPU sets the CPU time per request of the attack between two samples:
// the target's CPU time over the requests the bidder received, warmup
// included on both sides: every target forwards each request once. An
// answer made without asking the bidder (an error, an immediate 204) costs
// CPU but counts no request, which makes the figure an upper bound then.
func (s *attackSummary) setCPU(before, after cpuSample) {
	if n := after.requests - before.requests; n > 0 {
		s.cpuPerRequest = (after.cpu - before.cpu) / time.Duration(n)
		s.cpuMeasured = true
	}
}

// attackSummary is the part of loadtest's summary record the table uses
// (loadtest's JSON lines are its interface; it shares no code).
type attackSummary struct {
	Type       string  `json:"type"`
	Throughput float64 `json:"throughput"`
	LateShare  float64 `json:"late_share"`
	Tally      struct {
		Completed int64 `json:"completed"`
		OK        int64 `json:"ok"`
		NoBid     int64 `json:"nobid"`
	} `json:"tally"`
	Latency struct {
		P50  int64 `json:"p50_us"`
		P90  int64 `json:"p90_us"`
		P99  int64 `json:"p99_us"`
		P999 int64 `json:"p99_9_us"`
		Max  int64 `json:"max_us"`
	} `json:"latency"`
	// The target's own CPU time per request (setCPU), measured by benchrun.
	cpuPerRequest time.Duration
	cpuMeasured   bool
}

func (s *attackSummary) errShare() float64 {
	if s.Tally.Completed == 0 {
		return 1
	}
	return float64(s.Tally.Completed-s.Tally.OK-s.Tally.NoBid) / float64(s.Tally.Completed)
}

func readSummary(path string) (*attackSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"type":"summary"`) {
			continue
		}
		var s attackSummary
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &s, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: no summary record", path)
}

// fetchText GETs url (an admin /metrics) and returns the body.
func fetchText(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return string(body), err
}

// metricValue is one series' value in a Prometheus text exposition.
func metricValue(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if name, val, ok := strings.Cut(line, " "); ok && name == series {
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// handshakeNote says how many TLS handshakes the TLS upstream row's
// bidguard made over the run's attacks against its bidder calls, from its
// /metrics at the end: pooled connections make one handshake serve many
// calls. Between two of its attacks the row rests while the other targets
// run, longer than the upstream's idle timeout, so each attack opens its
// connections again.
func handshakeNote(metrics string, attacks int) string {
	const up = `{upstream="bench"}`
	handshakes, ok1 := metricValue(metrics, "bidguard_upstream_tls_handshake_seconds_count"+up)
	calls, ok2 := metricValue(metrics, "bidguard_upstream_duration_seconds_count"+up)
	resumed, _ := metricValue(metrics, "bidguard_upstream_tls_resumed_total"+up)
	if !ok1 || !ok2 {
		return tBidguardTLS + ": its /metrics has no TLS handshake or call count for the upstream."
	}
	per := "no handshake"
	if handshakes > 0 {
		per = fmt.Sprintf("%.0f calls per handshake, %.0f handshakes per attack (its connections are opened again after resting past the upstream's idleTimeoutMs while the other targets run)",
			calls/handshakes, handshakes/float64(max(attacks, 1)))
	}
	return fmt.Sprintf("%s: %.0f TLS handshakes (%.0f resumed) for %.0f bidder calls over its %d attacks, warmups included (`bidguard_upstream_tls_handshake_seconds_count`): %s.",
		tBidguardTLS, handshakes, resumed, calls, attacks, per)
}
