package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// results holds every round's summary by mode and target.
type results map[string]map[string][]*attackSummary

func (r results) add(mode, target string, s *attackSummary) {
	if r[mode] == nil {
		r[mode] = map[string][]*attackSummary{}
	}
	r[mode][target] = append(r[mode][target], s)
}

// median of the rounds' values (the mean of the middle two for an even
// count); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// stat is the median over rounds of one measure of one target.
type stat func(s *attackSummary) float64

var (
	statThroughput stat = func(s *attackSummary) float64 { return s.Throughput }
	statP50        stat = func(s *attackSummary) float64 { return float64(s.Latency.P50) }
	statP90        stat = func(s *attackSummary) float64 { return float64(s.Latency.P90) }
	statP99        stat = func(s *attackSummary) float64 { return float64(s.Latency.P99) }
	statP999       stat = func(s *attackSummary) float64 { return float64(s.Latency.P999) }
	statMax        stat = func(s *attackSummary) float64 { return float64(s.Latency.Max) }
	statLate       stat = func(s *attackSummary) float64 { return s.LateShare }
	statErr        stat = func(s *attackSummary) float64 { return s.errShare() }
)

// cpuMedian is the median over rounds of a target's CPU µs per request,
// over the rounds where it was measured.
func (r results) cpuMedian(mode, target string) (float64, bool) {
	var vs []float64
	for _, s := range r[mode][target] {
		if s.cpuMeasured {
			vs = append(vs, float64(s.cpuPerRequest)/float64(time.Microsecond))
		}
	}
	return median(vs), len(vs) > 0
}

// cpuRatio is the median over rounds of a target's CPU µs per request
// divided by the bare proxy's of the same round, over the rounds where both
// were measured. Within a round the two attacks run seconds apart, so the
// host's drift over a run (a third of a binary's CPU a request from one
// minute to the next on a shared machine) cancels out of each ratio, which
// a ratio of the two medians would keep.
func (r results) cpuRatio(mode, target string) (float64, bool) {
	ts, bs := r[mode][target], r[mode][tFast]
	var vs []float64
	for i := range min(len(ts), len(bs)) {
		if ts[i].cpuMeasured && bs[i].cpuMeasured && bs[i].cpuPerRequest > 0 {
			vs = append(vs, float64(ts[i].cpuPerRequest)/float64(bs[i].cpuPerRequest))
		}
	}
	return median(vs), len(vs) > 0
}

// cpuColumns are a target's "CPU µs/req" and "CPU × bare" cells.
func (r results) cpuColumns(mode, target string) (string, string) {
	cpu, ok := r.cpuMedian(mode, target)
	if !ok {
		return "n/a", "n/a"
	}
	x, ok := r.cpuRatio(mode, target)
	return fmt.Sprintf("%.1f", cpu), ratio(x, 1, ok)
}

// cpuUs formats one attack's CPU µs per request for the log.
func cpuUs(s *attackSummary) string {
	if !s.cpuMeasured {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(s.cpuPerRequest)/float64(time.Microsecond))
}

func (r results) median(mode, target string, f stat) (float64, bool) {
	runs := r[mode][target]
	if len(runs) == 0 {
		return 0, false
	}
	vs := make([]float64, len(runs))
	for i, s := range runs {
		vs[i] = f(s)
	}
	return median(vs), true
}

// ratio formats a/b as "0.23×", or "n/a" when b is missing or zero.
func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// ms formats microseconds as milliseconds.
func ms(us int64) string { return fmsf(float64(us)) }

func fmsf(us float64) string {
	if us < 10_000 {
		return fmt.Sprintf("%.3f", us/1000)
	}
	return fmt.Sprintf("%.1f", us/1000)
}

func pct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

// machine describes where the table was measured.
type machine struct {
	cpu, goVersion, nginx string
	cores                 int
	loadBefore, loadAfter string
	date                  time.Time
}

func describeMachine() machine {
	m := machine{cpu: "unknown", goVersion: runtime.Version(), cores: runtime.NumCPU(), nginx: "not run", loadBefore: loadAvg(), date: time.Now().UTC()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadAvg is the 1-minute load average, a hint of how shared the machine
// was.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// renderReport is the markdown of a comparison: the machine and command,
// then one table per mode with each target's medians and its ratios to
// nginx and to the bare fasthttp proxy.
func renderReport(m machine, cmdline string, o compareOptions, modes []mode, targets []string, r results, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s with `%s`: %d interleaved rounds of %s attacks (%s warmup, unmeasured), %d connections, medians over rounds.\n",
		m.date.Format("2006-01-02 15:04 UTC"), cmdline, o.rounds, o.duration, o.warmup, o.connections)
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s, nginx %s; load average %s before, %s after. Requests: `%s`; fake bidder latency %s.\n",
		m.cpu, m.cores, m.goVersion, m.nginx, m.loadBefore, m.loadAfter, o.requests, o.bidderLatency)
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	for _, md := range modes {
		fmt.Fprintf(&b, "\n**%s**\n\n", md.title(o.connections))
		nginxThr, haveNginx := r.median(md.name, tNginx, statThroughput)
		fastThr, haveFast := r.median(md.name, tFast, statThroughput)
		if md.rate == 0 {
			b.WriteString("| target | req/s | CPU µs/req | CPU × bare | × nginx | × bare proxy | p50 ms | p99 ms | p99.9 ms | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, t := range targets {
				thr, ok := r.median(md.name, t, statThroughput)
				if !ok {
					continue
				}
				p50, _ := r.median(md.name, t, statP50)
				p99, _ := r.median(md.name, t, statP99)
				p999, _ := r.median(md.name, t, statP999)
				e, _ := r.median(md.name, t, statErr)
				cpu, cpuBare := r.cpuColumns(md.name, t)
				fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n", t, thr, cpu, cpuBare, ratio(thr, nginxThr, haveNginx), ratio(thr, fastThr, haveFast),
					fmsf(p50), fmsf(p99), fmsf(p999), pct(e))
			}
			if base, ok := r.median(md.name, tBaseline, statThroughput); ok {
				thr, _ := r.median(md.name, tBidguard, statThroughput)
				fmt.Fprintf(&b, "\nbidguard against the baseline build: %s the throughput", ratio(thr, base, true))
				if baseCPU, ok := r.cpuMedian(md.name, tBaseline); ok {
					cpu, ok := r.cpuMedian(md.name, tBidguard)
					fmt.Fprintf(&b, ", %s the CPU per request", ratio(cpu, baseCPU, ok))
				}
				b.WriteString(".\n")
			}
			if tlsThr, ok := r.median(md.name, tBidguardTLS, statThroughput); ok {
				thr, haveThr := r.median(md.name, tBidguard, statThroughput)
				fmt.Fprintf(&b, "\n%s against bidguard: %s the throughput", tBidguardTLS, ratio(tlsThr, thr, haveThr))
				if plainCPU, ok := r.cpuMedian(md.name, tBidguard); ok {
					cpu, ok := r.cpuMedian(md.name, tBidguardTLS)
					fmt.Fprintf(&b, ", %s the CPU per request", ratio(cpu, plainCPU, ok))
				}
				b.WriteString(".\n")
			}
			continue
		}
		nginx50, _ := r.median(md.name, tNginx, statP50)
		nginx99, _ := r.median(md.name, tNginx, statP99)
		fast50, _ := r.median(md.name, tFast, statP50)
		fast99, _ := r.median(md.name, tFast, statP99)
		b.WriteString("| target | req/s | CPU µs/req | CPU × bare | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | p50 × nginx | p99 × nginx | p50 × bare | p99 × bare | late sends | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range targets {
			thr, ok := r.median(md.name, t, statThroughput)
			if !ok {
				continue
			}
			p50, _ := r.median(md.name, t, statP50)
			p90, _ := r.median(md.name, t, statP90)
			p99, _ := r.median(md.name, t, statP99)
			p999, _ := r.median(md.name, t, statP999)
			mx, _ := r.median(md.name, t, statMax)
			late, _ := r.median(md.name, t, statLate)
			e, _ := r.median(md.name, t, statErr)
			cpu, cpuBare := r.cpuColumns(md.name, t)
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", t, thr, cpu, cpuBare, fmsf(p50), fmsf(p90), fmsf(p99), fmsf(p999), fmsf(mx),
				ratio(p50, nginx50, haveNginx), ratio(p99, nginx99, haveNginx), ratio(p50, fast50, haveFast), ratio(p99, fast99, haveFast), pct(late), pct(e))
		}
		if base50, ok := r.median(md.name, tBaseline, statP50); ok {
			base99, _ := r.median(md.name, tBaseline, statP99)
			p50, _ := r.median(md.name, tBidguard, statP50)
			p99, _ := r.median(md.name, tBidguard, statP99)
			fmt.Fprintf(&b, "\nbidguard against the baseline build: p50 %s, p99 %s.\n", ratio(p50, base50, true), ratio(p99, base99, true))
		}
		if tls50, ok := r.median(md.name, tBidguardTLS, statP50); ok {
			tls99, _ := r.median(md.name, tBidguardTLS, statP99)
			p50, have := r.median(md.name, tBidguard, statP50)
			p99, _ := r.median(md.name, tBidguard, statP99)
			fmt.Fprintf(&b, "\n%s against bidguard: p50 %s, p99 %s.\n", tBidguardTLS, ratio(tls50, p50, have), ratio(tls99, p99, have))
		}
	}
	b.WriteString("\nCPU µs/req is the target's own CPU time (user + system, all its processes: nginx's workers included; for direct, the bidder's) over the requests the bidder received, from /proc before and after each attack, warmup included; the kernel counts it in clock ticks (10 ms at 100 Hz). CPU × bare is the median over rounds of the ratio to the bare proxy's CPU µs/req of the same round. Throughput ratios: higher is better; latency and CPU ratios: lower is better. A late-send share over 1% means the generator could not keep the schedule in that run (its latencies still count from the scheduled times).\n")
	return b.String()
}
