package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/internal/testserve"
)

// prometheusLifetime bounds the Prometheus server a scenario starts: it is
// killed then even if the test hangs.
const prometheusLifetime = 3 * time.Minute

// prometheusTools returns the paths of prometheus and promtool, installing
// Debian's package first when either is missing (.ci/install-prometheus:
// as root with apt-get, as in CI; elsewhere it fails saying what to
// install).
func prometheusTools(t *testing.T) (prom, promtool string) {
	t.Helper()
	look := func() bool {
		var err1, err2 error
		prom, err1 = exec.LookPath("prometheus")
		promtool, err2 = exec.LookPath("promtool")
		return err1 == nil && err2 == nil
	}
	if look() {
		return prom, promtool
	}
	out, err := exec.Command("../.ci/install-prometheus").CombinedOutput()
	require.NoError(t, err, "installing prometheus: %s", out)
	require.True(t, look(), "prometheus and promtool on PATH after .ci/install-prometheus")
	return prom, promtool
}

// promBidder answers every bid request with a good banner bid, a video bid
// on the video imp (creativeSize skips it: bids_skipped_total{why="media"})
// and a bad one (impidMatch rejects it: bids_rejected_total).
func promBidder(t *testing.T) *testbidder.Bidder {
	return newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"cur":"USD","seatbid":[{"seat":"s1","bid":[`+
			`{"id":"b1","impid":"1","price":1.5,"adomain":["brand.example"],"crid":"c1","w":300,"h":250,"mtype":1,"adm":"<b>ad</b>"},`+
			`{"id":"v1","impid":"3","price":2,"adomain":["brand.example"],"crid":"c3","mtype":2,"adm":"<VAST version=\"4.0\"></VAST>"},`+
			`{"id":"bad-1","impid":"999","price":2.5,"adomain":["evil.example"],"crid":"c9","adm":"<b>x</b>"}]}]}`, requestID(body))
	}, testbidder.Latency(2*time.Millisecond))
}

const promPolicy = `policy:
  gates:
    - gate: tmaxGuard
      options: {bufferMs: 5}
    - gate: impidMatch
    - {gate: bidSanity, options: {maxFloorMultiple: 50}}
    - gate: creativeSize
`

// dashboardQuery is one query of the Grafana dashboard.
type dashboardQuery struct{ panel, expr string }

// dashboardQueries reads every panel query of configs/grafana/bidguard.json
// and the upstream variable's label_values query.
func dashboardQueries(t *testing.T) ([]dashboardQuery, string) {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(repoFile(t, "configs/grafana/bidguard.json"), &dash))
	var qs []dashboardQuery
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, dashboardQuery{p.Title, tg.Expr})
		}
	}
	variable := ""
	for _, v := range dash.Templating.List {
		if v.Name == "upstream" {
			variable, _ = v.Query.(string)
		}
	}
	return qs, variable
}

// grafanaExpr replaces the dashboard's variables as Grafana would: every
// upstream, and a rate window of four scrape intervals ($__rate_interval
// for a 1 s scrape interval).
func grafanaExpr(expr string) string {
	return strings.NewReplacer(`"$upstream"`, `".*"`, "$__rate_interval", "4s").Replace(expr)
}

// promResult is a Prometheus HTTP API answer.
type promResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   json.RawMessage
}

func promGet(t *testing.T, base, path string, q url.Values) promResult {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + path + "?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var r promResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Equal(t, "success", r.Status, "%s %v: %s", path, q, r.Error)
	return r
}

// instantQuery runs a PromQL query and returns its vector's values.
func instantQuery(t *testing.T, base, expr string) []float64 {
	t.Helper()
	r := promGet(t, base, "/api/v1/query", url.Values{"query": {expr}})
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &data))
	require.Equal(t, "vector", data.ResultType, expr)
	var vals []float64
	for _, s := range data.Result {
		v, err := strconv.ParseFloat(s.Value[1].(string), 64)
		require.NoError(t, err)
		vals = append(vals, v)
	}
	return vals
}

// TestPrometheusScrapesServe runs a real Prometheus (Debian's package) on
// loopback against a serve under load: promtool accepts /metrics, the
// families reach Prometheus with their type and help, and every query of
// the Grafana dashboard returns data through the HTTP API.
func TestPrometheusScrapesServe(t *testing.T) {
	slow(t)
	scenario(t, "ops/prometheus-scrape")
	prom, promtool := prometheusTools(t)

	b := promBidder(t)
	p := startProc(t, procOpts{upstream: b.URL + "/bid", policy: promPolicy})
	var stop atomic.Bool
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for !stop.Load() {
			runLoad(t, loadSpec{addr: p.addr, conns: 4, rate: 200, dur: time.Second, tmaxMs: 200})
		}
	}()
	stopLoad := func() {
		stop.Store(true)
		<-loadDone
	}
	t.Cleanup(stopLoad)

	// promtool's exposition lint: format, # HELP on every family, names
	// that fit their types.
	require.Eventually(t, func() bool { return p.metric(`bidguard_bids_skipped_total{gate="rtb.creative-size",why="media"}`) > 0 },
		10*time.Second, 50*time.Millisecond, "the load creates every series family")
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = strings.NewReader(p.metrics())
	out, err := lint.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics")

	base := startPrometheus(t, prom, p.admin)
	require.Eventually(t, func() bool {
		v := instantQuery(t, base, `up{job="bidguard"}`)
		return len(v) == 1 && v[0] == 1
	}, 30*time.Second, 200*time.Millisecond, "Prometheus scrapes serve")

	// The metadata Prometheus scraped: types and help.
	r := promGet(t, base, "/api/v1/metadata", url.Values{})
	var meta map[string][]struct{ Type, Help string }
	require.NoError(t, json.Unmarshal(r.Data, &meta))
	for fam, typ := range map[string]string{
		"bidguard_requests_total": "counter", "bidguard_upstream_duration_seconds": "histogram",
		"bidguard_gate_duration_seconds": "histogram", "bidguard_build_info": "gauge", "bidguard_inflight_limit": "gauge",
	} {
		require.NotEmpty(t, meta[fam], fam)
		require.Equal(t, typ, meta[fam][0].Type, fam)
		require.NotEmpty(t, meta[fam][0].Help, fam)
	}
	for fam, m := range meta {
		if strings.HasPrefix(fam, "bidguard_") {
			require.NotContains(t, m[0].Help, "no description", fam)
		}
	}

	// Every panel query returns at least one finite value (a quantile over
	// buckets with no traffic would be NaN), within a few scrapes.
	queries, variable := dashboardQueries(t)
	require.NotEmpty(t, queries)
	pending := map[string]string{}
	for _, q := range queries {
		pending[grafanaExpr(q.expr)] = q.panel
	}
	last := map[string][]float64{}
	deadline := time.Now().Add(60 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for expr := range pending {
			vals := instantQuery(t, base, expr)
			last[expr] = vals
			for _, v := range vals {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					delete(pending, expr)
					break
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	for expr, panel := range pending {
		t.Errorf("panel %q: %s returned %v", panel, expr, last[expr])
	}
	t.Logf("%d dashboard queries answered by Prometheus", len(queries))

	// The upstream variable: label_values(bidguard_requests_total, upstream).
	require.Equal(t, "label_values(bidguard_requests_total, upstream)", variable)
	r = promGet(t, base, "/api/v1/label/upstream/values", url.Values{"match[]": {"bidguard_requests_total"}})
	var upstreams []string
	require.NoError(t, json.Unmarshal(r.Data, &upstreams))
	require.Contains(t, upstreams, "dsp")

	// Quantiles from the le buckets are plausible: the bidder sleeps 2 ms.
	p99 := instantQuery(t, base, `histogram_quantile(0.99, sum by (le) (rate(bidguard_upstream_duration_seconds_bucket{upstream="dsp"}[10s])))`)
	require.Len(t, p99, 1)
	require.Greater(t, p99[0], 0.002)
	require.Less(t, p99[0], 0.2)
	stopLoad()
	p.healthy()
}

// startPrometheus runs prometheus on a free loopback port with its own
// storage directory, scraping admin every second; it is killed when the
// test ends or after prometheusLifetime. It returns the API's base URL.
func startPrometheus(t *testing.T, prom, admin string) string {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: bidguard
    static_configs:
      - targets: [%q]
`, admin)), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), prometheusLifetime)
	cmd := exec.CommandContext(ctx, prom,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--storage.tsdb.retention.time=1h",
		"--web.listen-address="+listen,
		"--log.level=warn")
	var logs testserve.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cancel() // kills it
		<-exited
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	base := "http://" + listen
	c := &http.Client{Timeout: time.Second}
	require.Eventually(t, func() bool {
		select {
		case <-exited:
			return true // reported below
		default:
		}
		resp, err := c.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "prometheus ready; log: %s", &logs)
	select {
	case <-exited:
		t.Fatalf("prometheus exited: %s", logs.String())
	default:
	}
	return base
}
