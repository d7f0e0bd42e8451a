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
	require.Contains(t, md, "| bidguard | 6000 | 0.30× | 0.20× | 1.500 | 4.000 | 4.000 | 10.00% |", "closed loop: throughput over nginx's and the bare proxy's medians")
	require.Contains(t, md, "| nginx | 20000 | 1.00× | 0.67× |")
	require.Contains(t, md, "| bidguard | 1990 | 0.300 | 0.300 | 1.500 | 1.500 | 1.500 | 1.50× | 1.50× | 3.00× | 3.00× | 0.00% | 0.00% |", "open loop: latency ratios")
	require.NotContains(t, md, "| direct |", "targets without results are left out")
	require.Contains(t, md, "nginx note")
	require.NotContains(t, md, "baseline", "no baseline line without a baseline build")

	r.add("closed", tBaseline, sum(4000, 2000, 5000, 10, 10))
	r.add("open-2000", tBaseline, sum(1990, 600, 1000, 10, 10))
	md = renderReport(machine{}, "make compare", o, modes, []string{tFast, tNginx, tBaseline, tBidguard}, r, nil)
	require.Contains(t, md, "| bidguard baseline | 4000 | 0.20× | 0.13× |")
	require.Contains(t, md, "bidguard against the baseline build: 1.50× the throughput.")
	require.Contains(t, md, "bidguard against the baseline build: p50 0.50×, p99 1.50×.")

	require.Equal(t, "n/a", ratio(1, 0, true))
	require.Equal(t, "n/a", ratio(1, 2, false))
	_, err = parseModes("1000,x")
	require.Error(t, err)
}

func TestBidguardConfigKeepsTheEmbeddedPolicy(t *testing.T) {
	cfg, err := bidguardConfig("127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:3/bid")
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
