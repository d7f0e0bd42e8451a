package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestMedian(t *testing.T) {
	require.Equal(t, 0.0, median(nil))
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	vs := []float64{3, 1, 2}
	median(vs)
	require.Equal(t, []float64{3, 1, 2}, vs, "the input is not reordered")
}

func sum(thr float64, p50, p99 int64, completed, ok int64) *attackSummary {
	s := &attackSummary{Throughput: thr}
	s.setCPU(cpuSample{}, cpuSample{cpu: time.Duration(p50) * time.Millisecond, requests: 10_000}) // p50/10 µs per request
	s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Latency.P999, s.Latency.Max = p50, p50, p99, p99, p99
	s.Tally.Completed, s.Tally.OK = completed, ok
	return s
}

func TestRenderReportRatios(t *testing.T) {
	r := results{}
	for _, v := range []float64{100, 300, 200} { // median 200
		r.add("closed", tNginx, sum(v*100, 500, 2000, 10, 10))
	}
	for _, v := range []float64{400, 250, 300} { // median 300
		r.add("closed", tFast, sum(v*100, 400, 1000, 10, 10))
	}
	r.add("closed", tBidguard, sum(6000, 1500, 4000, 10, 9))
	r.add("open-2000", tNginx, sum(2000, 200, 1000, 10, 10))
	r.add("open-2000", tFast, sum(2000, 100, 500, 10, 10))
	r.add("open-2000", tBidguard, sum(1990, 300, 1500, 10, 10))
	o := compareOptions{rounds: 3, duration: 3 * time.Second, warmup: 500 * time.Millisecond, connections: 64, requests: "req.json", bidderLatency: "0"}
	modes, err := parseModes("2000")
	require.NoError(t, err)
	md := renderReport(machine{cpu: "CPU X", cores: 2, goVersion: "go1.26", nginx: "1.22"}, "make compare", o, modes,
		[]string{tDirect, tFast, tNginx, tHTTPUtil, tBidguard}, r, []string{"nginx note"})
	require.Contains(t, md, "CPU X, 2 cores, go1.26, nginx 1.22")
	require.Contains(t, md, "`make compare`")
	require.Contains(t, md, "| bidguard | 6000 | 150.0 | 3.75× | 0.30× | 0.20× | 1.500 | 4.000 | 4.000 | 10.00% |",
		"closed loop: CPU per request and its ratio to the bare proxy's, throughput over nginx's and the bare proxy's medians")
	require.Contains(t, md, "| nginx | 20000 | 50.0 | 1.25× | 1.00× | 0.67× |")
	require.Contains(t, md, "| fasthttp proxy | 30000 | 40.0 | 1.00× |")
	require.Contains(t, md, "| bidguard | 1990 | 30.0 | 3.00× | 0.300 | 0.300 | 1.500 | 1.500 | 1.500 | 1.50× | 1.50× | 3.00× | 3.00× | 0.00% | 0.00% |", "open loop: latency ratios")
	require.NotContains(t, md, "| direct |", "targets without results are left out")
	require.Contains(t, md, "nginx note")
	require.NotContains(t, md, "baseline", "no baseline line without a baseline build")

	r.add("closed", tBaseline, sum(4000, 2000, 5000, 10, 10))
	r.add("open-2000", tBaseline, sum(1990, 600, 1000, 10, 10))
	md = renderReport(machine{}, "make compare", o, modes, []string{tFast, tNginx, tBaseline, tBidguard}, r, nil)
	require.Contains(t, md, "| bidguard baseline | 4000 | 200.0 | 5.00× | 0.20× | 0.13× |")
	require.Contains(t, md, "bidguard against the baseline build: 1.50× the throughput, 0.75× the CPU per request.")
	require.Contains(t, md, "bidguard against the baseline build: p50 0.50×, p99 1.50×.")

	require.Equal(t, "n/a", ratio(1, 0, true))
	require.Equal(t, "n/a", ratio(1, 2, false))
	_, err = parseModes("1000,x")
	require.Error(t, err)
}

// TestRenderReportCPU: rounds without a CPU measurement are left out of the
// median; the ratio to the bare proxy is the median of each round's; a
// target never measured, or no bare proxy to compare with, shows n/a.
func TestRenderReportCPU(t *testing.T) {
	r := results{}
	for _, us := range []time.Duration{30, 90, 40} { // median 40
		s := sum(10000, 1, 1, 10, 10)
		s.setCPU(cpuSample{cpu: time.Second, requests: 5}, cpuSample{cpu: time.Second + 1000*us*time.Microsecond, requests: 1005})
		r.add("closed", tFast, s)
	}
	unmeasured := sum(9000, 1, 1, 10, 10)
	unmeasured.cpuMeasured = false
	r.add("closed", tFast, unmeasured) // would make the median 35 if counted
	// Per round 2.0×, 2.0×, 3.0× the bare proxy: the ratio is their median
	// (2.0×), not the ratio of the two medians (120/40).
	for _, p50 := range []int64{600, 1800, 1200} {
		r.add("closed", tBidguard, sum(5000, p50, 1000, 10, 10))
	}
	none := sum(5000, 1, 1, 10, 10)
	none.cpuMeasured = false
	none.setCPU(cpuSample{cpu: time.Second, requests: 7}, cpuSample{cpu: 2 * time.Second, requests: 7}) // no request: not measured
	r.add("closed", tNginx, none)
	o := compareOptions{rounds: 3, duration: time.Second, connections: 64}
	modes, err := parseModes("")
	require.NoError(t, err)
	md := renderReport(machine{}, "make compare", o, modes, []string{tFast, tNginx, tBidguard}, r, nil)
	require.Contains(t, md, "| fasthttp proxy | 10000 | 40.0 | 1.00× |")
	require.Contains(t, md, "| bidguard | 5000 | 120.0 | 2.00× |")
	require.Contains(t, md, "| nginx | 5000 | n/a | n/a |")

	delete(r["closed"], tFast)
	md = renderReport(machine{}, "make compare", o, modes, []string{tFast, tNginx, tBidguard}, r, nil)
	require.Contains(t, md, "| bidguard | 5000 | 120.0 | n/a |", "no bare proxy: no ratio")
}

func TestParseProcStat(t *testing.T) {
	// comm may hold spaces and parentheses: fields count from the last ')'.
	line := "4242 (nginx: worker) (x)) S 4200 4200 4200 0 -1 4194624 1 2 3 4 1234 567 8 9 20 0 1 0 100 1000 10\n"
	s, err := parseProcStat(line)
	require.NoError(t, err)
	require.Equal(t, procStat{pid: 4242, ppid: 4200, pgrp: 4200, ticks: 1234 + 567}, s)

	for _, bad := range []string{"", "4242 nginx S 1 2", "x (a) S 1 2 3 4 5 6 7 8 9 10 11 12", "1 (a) S 1 2 3 4 5 6 7 8 9 10 11",
		"1 (a) S 1 2 3 4 5 6 7 8 9 10 -11 12"} {
		_, err := parseProcStat(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestGroupTicks(t *testing.T) {
	stats := []procStat{
		{pid: 1, ppid: 0, pgrp: 1, ticks: 1000},     // init: not the target's
		{pid: 100, ppid: 1, pgrp: 100, ticks: 10},   // the target's leader (nginx master)
		{pid: 101, ppid: 100, pgrp: 100, ticks: 20}, // a worker
		{pid: 102, ppid: 100, pgrp: 102, ticks: 40}, // a child that made a group of its own
		{pid: 103, ppid: 102, pgrp: 102, ticks: 80}, // and its child
		{pid: 200, ppid: 1, pgrp: 200, ticks: 160},  // another target
		{pid: 201, ppid: 1, pgrp: 100, ticks: 320},  // in the group, not a descendant: still the group's
	}
	require.EqualValues(t, 10+20+40+80+320, groupTicks(stats, 100))
	require.EqualValues(t, 160, groupTicks(stats, 200))
	require.EqualValues(t, 0, groupTicks(stats, 300))
}

// TestReadProcStats reads a /proc-like tree: numeric directories only, a
// process gone between the listing and the read is skipped, a malformed
// line is an error.
func TestReadProcStats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, stat string) {
		require.NoError(t, os.MkdirAll(dir+"/"+name, 0o755))
		if stat != "" {
			require.NoError(t, os.WriteFile(dir+"/"+name+"/stat", []byte(stat), 0o644))
		}
	}
	write("7", "7 (a b) S 1 7 7 0 -1 0 0 0 0 0 100 50 0 0 20 0 1 0 5 0 0\n")
	write("8", "8 (c) R 7 7 7 0 -1 0 0 0 0 0 300 25 0 0 20 0 1 0 5 0 0\n")
	write("9", "") // exited: no stat file
	write("self", "not a process")
	stats, err := readProcStats(dir)
	require.NoError(t, err)
	require.Len(t, stats, 2)
	require.EqualValues(t, 150+325, groupTicks(stats, 7))
	old := clockTicks
	clockTicks = 100
	defer func() { clockTicks = old }()
	cpu, err := groupCPU(dir, 7)
	require.NoError(t, err)
	require.Equal(t, 4750*time.Millisecond, cpu)

	write("10", "10 (d) S")
	_, err = readProcStats(dir)
	require.Error(t, err)
}

// TestGroupCPULive reads the real /proc: a child that burnt some CPU
// before it exec'd into sleep is charged with it, through its group.
func TestGroupCPULive(t *testing.T) {
	p := &procs{dir: t.TempDir()}
	defer p.stopAll()
	c, err := p.start("burner", "sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec sleep 60")
	require.NoError(t, err)
	for range 1500 { // the loop takes well under a second of CPU; wait up to 30s under load
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c.pid()) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(c.pid()) + "/stat")
	require.NoError(t, err)
	own, err := parseProcStat(string(stat))
	require.NoError(t, err)
	require.Contains(t, string(stat), "(sleep)", "the burner finished its loop")
	require.Positive(t, own.ticks, "the loop used CPU")
	cpu, err := groupCPU("/proc", c.pid())
	require.NoError(t, err)
	require.Equal(t, time.Duration(own.ticks)*time.Second/time.Duration(clockTicks), cpu)
	require.EqualValues(t, 100, readClockTicks("/proc/self/auxv"), "USER_HZ on Linux")
	require.EqualValues(t, 100, readClockTicks(t.TempDir()+"/none"), "the fallback")
}

func TestBidguardConfigKeepsTheEmbeddedPolicy(t *testing.T) {
	cfg, err := bidguardConfig("127.0.0.1:1", "127.0.0.1:2", plainUpstream("127.0.0.1:3"), "")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, yaml.Unmarshal(cfg, &got))
	require.Equal(t, "127.0.0.1:1", got["listen"])
	require.Equal(t, "127.0.0.1:2", got["adminListen"])
	require.Equal(t, []any{map[string]any{"name": "bench", "url": "http://127.0.0.1:3/bid", "path": "/"}}, got["upstreams"])
	gates := got["policy"].(map[string]any)["gates"].([]any)
	require.Greater(t, len(gates), 15, "the embedded default policy, not an empty one")

	// bidguard itself accepts it.
	bin := t.TempDir() + "/bidguard"
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/bidguard").CombinedOutput()
	require.NoError(t, err, string(out))
	path := t.TempDir() + "/bg.yaml"
	require.NoError(t, os.WriteFile(path, cfg, 0o644))
	out, err = exec.Command(bin, "config", "validate", "--config", path).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "rtb.floor")

	// The TLS upstream row's config: an https url and the tls block, which
	// bidguard accepts (it reads the files when it validates).
	files, err := writeTLSFiles(t.TempDir())
	require.NoError(t, err)
	cfg, err = bidguardConfig("127.0.0.1:1", "127.0.0.1:2", upstreamSpec{url: "https://127.0.0.1:3/bid", tls: &files}, "")
	require.NoError(t, err)
	got = nil
	require.NoError(t, yaml.Unmarshal(cfg, &got))
	require.Equal(t, []any{map[string]any{"name": "bench", "url": "https://127.0.0.1:3/bid", "path": "/",
		"tls": map[string]any{"caFile": files.ca, "certFile": files.clientCert, "keyFile": files.clientKey}}}, got["upstreams"])
	require.NoError(t, os.WriteFile(path, cfg, 0o644))
	out, err = exec.Command(bin, "config", "validate", "--config", path).CombinedOutput()
	require.NoError(t, err, string(out))
}

// The baseline build gets only the keys every build knows: an earlier
// build refuses keys added since (strict decoding).
func TestBaselineConfigSetsOnlyTheCommonKeys(t *testing.T) {
	cfg, err := baselineConfig("127.0.0.1:1", "127.0.0.1:2", plainUpstream("127.0.0.1:3"), "/seats")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, yaml.Unmarshal(cfg, &got))
	require.Equal(t, map[string]any{"listen": "127.0.0.1:1", "adminListen": "127.0.0.1:2", "seatsDir": "/seats",
		"upstreams": []any{map[string]any{"name": "bench", "url": "http://127.0.0.1:3/bid", "path": "/"}}}, got)
	_, err = baselineConfig("127.0.0.1:1", "127.0.0.1:2", upstreamSpec{url: "https://x/bid", tls: &tlsFiles{}}, "")
	require.Error(t, err)
}

func TestNginxConf(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, nginxConf.Execute(&b, map[string]string{"Dir": "/tmp/x", "Bidder": "127.0.0.1:9", "Listen": "127.0.0.1:8"}))
	conf := b.String()
	for _, want := range []string{"daemon off;", "listen 127.0.0.1:8;", "server 127.0.0.1:9;", "keepalive 256;",
		"proxy_http_version 1.1;", `proxy_set_header Connection "";`, "pid /tmp/x/nginx.pid;"} {
		require.Contains(t, conf, want)
	}
	if nginx, why := findNginx(); nginx != "" {
		dir := t.TempDir()
		b.Reset()
		require.NoError(t, nginxConf.Execute(&b, map[string]string{"Dir": dir, "Bidder": "127.0.0.1:9", "Listen": "127.0.0.1:8"}))
		require.NoError(t, os.WriteFile(dir+"/nginx.conf", b.Bytes(), 0o644))
		out, err := exec.Command(nginx, "-t", "-p", dir, "-e", dir+"/error.log", "-c", dir+"/nginx.conf").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "syntax is ok")
	} else {
		t.Logf("nginx -t not run: %s", why)
	}
}

func TestProcsStopEverything(t *testing.T) {
	p := &procs{dir: t.TempDir()}
	// A child whose own child ignores nothing but would outlive a plain kill
	// of the parent: stopAll kills the process group.
	c, err := p.start("sleeper", "sh", "-c", "sleep 60 & sleep 60")
	require.NoError(t, err)
	start := time.Now()
	p.stopAll()
	require.Less(t, time.Since(start), 10*time.Second)
	select {
	case <-c.done:
	default:
		t.Fatal("child still running")
	}
	// Killed processes leave the group once they are gone (zombies waiting
	// for a reaper do not count): wait a bounded time for that.
	var left []string
	for range 250 {
		if left = liveInGroup(c.cmd.Process.Pid); len(left) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Empty(t, left, "no process left in the group")
}

// liveInGroup lists the processes of group pgid that are not zombies.
func liveInGroup(pgid int) []string {
	out, _ := exec.Command("pgrep", "-g", strconv.Itoa(pgid)).Output()
	var live []string
	for _, pid := range strings.Fields(string(out)) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		live = append(live, pid)
	}
	return live
}
