package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// dashboardMetrics returns every bidguard metric name the Grafana dashboard
// queries (histogram suffixes kept: _bucket, _sum and _count are checked as
// written).
func dashboardMetrics(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	name := regexp.MustCompile(`\bbidguard_[a-z_]+\b`)
	seen := map[string]bool{}
	var names []string
	add := func(expr string) {
		for _, n := range name.FindAllString(expr, -1) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
			add(tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			add(q)
		}
	}
	return names
}

// scrapedMetrics returns the metric names (labels stripped) of a Prometheus
// text exposition.
func scrapedMetrics(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

// TestGrafanaDashboardQueriesExistingMetrics runs serve against a bidder
// whose answers exercise every series family (a passed bid, a rejected one,
// a bid of another taxonomy that bcatCompliance skips, bidder failures), then
// checks that every metric the dashboard in configs/grafana queries is on
// /metrics.
func TestGrafanaDashboardQueriesExistingMetrics(t *testing.T) {
	names := dashboardMetrics(t, "../../configs/grafana/bidguard.json")
	require.NotEmpty(t, names)

	bidder := testbidder.HTTP(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"r1","cur":"USD","seatbid":[{"seat":"s1","bid":[
			{"id":"ok","impid":"1","price":1,"crid":"c1","adomain":["brand.com"],"adm":"<div>ad</div>","w":300,"h":250,"mtype":1},
			{"id":"bad","impid":"9","price":1,"crid":"c2","adomain":["brand.com"],"adm":"<div>ad</div>","w":300,"h":250,"mtype":1},
			{"id":"tax","impid":"1","price":1,"crid":"c3","adomain":["brand.com"],"adm":"<div>ad</div>","w":300,"h":250,"mtype":1,"cattax":2,"cat":["x"]}]}]}`)
	})

	s, stop := serveInProcess(t, serveFlags{config: loopbackConfig(t), upstream: bidder.URL + "/"})
	addr, admin, errOut := s.addr, s.admin, s.stderr

	req := `{"id":"r1","tmax":500,"bcat":["IAB25"],"imp":[{"id":"1","banner":{"w":300,"h":250}}]}`
	for range 3 {
		resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(req))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, errOut.String())
	}
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	have := scrapedMetrics(string(body))
	for _, n := range names {
		require.True(t, have[n], "the dashboard queries %s, which /metrics does not serve", n)
	}
	// Every family serve exposes, its own included, is described.
	helps := regexp.MustCompile(`(?m)^# HELP (\S+) (.*)$`).FindAllStringSubmatch(string(body), -1)
	described := map[string]bool{}
	for _, h := range helps {
		require.NotContains(t, h[2], "(no description)", h[1])
		described[h[1]] = true
	}
	for fam := range serveMetricHelp {
		require.True(t, described[fam], "%s is exposed with its # HELP", fam)
	}
	require.Regexp(t, `(?m)^bidguard_build_info\{version="`+regexp.QuoteMeta(version)+`",revision="`+regexp.QuoteMeta(revision)+`",goversion="go[^"]+"\} 1$`, string(body))
	require.Equal(t, 0, stop())
}

// TestDashboardCheckCanFail shows the check above catches a metric that does
// not exist.
func TestDashboardCheckCanFail(t *testing.T) {
	have := scrapedMetrics("bidguard_requests_total{upstream=\"a\",outcome=\"bid\"} 1\n# HELP x\nbidguard_shed_total 0\n")
	require.True(t, have["bidguard_requests_total"])
	require.True(t, have["bidguard_shed_total"])
	require.False(t, have["bidguard_requests"])
	dir := t.TempDir()
	path := dir + "/d.json"
	require.NoError(t, os.WriteFile(path, []byte(`{"panels":[{"title":"x","targets":[{"expr":"rate(bidguard_nope_total[1m]) + bidguard_shed_total"}]}]}`), 0o644))
	require.Equal(t, []string{"bidguard_nope_total", "bidguard_shed_total"}, dashboardMetrics(t, path))
}

// TestDashboardIsPrometheusNative: the dashboard's latency panels aggregate
// le buckets (plain Prometheus), never VictoriaMetrics' vmrange.
func TestDashboardIsPrometheusNative(t *testing.T) {
	raw, err := os.ReadFile("../../configs/grafana/bidguard.json")
	require.NoError(t, err)
	require.NotContains(t, string(raw), "vmrange")
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	quantile := regexp.MustCompile(`histogram_quantile\(0\.\d+, sum by \(([a-z, ]+)\) \(rate\((bidguard_[a-z_]+)\{?`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "histogram_quantile") {
				continue
			}
			m := quantile.FindStringSubmatch(tg.Expr)
			require.NotNil(t, m, tg.Expr)
			require.Contains(t, strings.Split(m[1], ", "), "le", tg.Expr)
			require.True(t, strings.HasSuffix(m[2], "_bucket"), tg.Expr)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 3, "upstream p50 and p99, gate p99")
}
