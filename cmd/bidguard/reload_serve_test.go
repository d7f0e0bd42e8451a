package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/internal/testserve"
)

// Reload through `serve`: real requests to a fake bidder on loopback whose
// one bid (seat s1, price 5) passes bidSanity{maxPrice: 10} and fails
// bidSanity{maxPrice: 1}.

const (
	reloadBid = `{"id":"r1","seatbid":[{"seat":"s1","bid":[{"id":"b1","impid":"1","price":5,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"}]}]}`
	reloadReq = `{"id":"r1","tmax":500,"imp":[{"id":"1","banner":{"w":300,"h":250}}]}`
)

// reloadServeConfig polls every 20 ms (pollMs) and caps the bid price.
func reloadServeConfig(pollMs, maxPrice string) string {
	return "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\nreloadPollMs: " + pollMs + "\nseatsDir: seats\nshutdown: {drainMs: 0}\n" +
		"policy:\n  gates:\n    - gate: impidMatch\n    - {gate: bidSanity, options: {maxPrice: " + maxPrice + "}}\n"
}

// fakeBidder answers every request with reloadBid; it returns its URL.
func fakeBidder(t *testing.T) string {
	t.Helper()
	return testbidder.HTTP(t, testbidder.Answer(200, []byte(reloadBid))).URL + "/bid"
}

// reloadConfigDir writes the config and an empty seats dir.
func reloadConfigDir(t *testing.T, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "seats"), 0o755))
	path := filepath.Join(dir, "bidguard.yaml")
	writeAtomic(t, path, cfg)
	return path
}

type served struct {
	addr, admin string
	stderr      *testserve.Buffer
}

// serveInProcess runs serve in process with f until stop, which returns
// its exit status (-1, and the test fails, when serve does not stop within
// 15 s). A serve the test did not stop is stopped when the test ends.
func serveInProcess(t *testing.T, f serveFlags) (served, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errOut := &testserve.Buffer{}
	done := make(chan int, 1)
	go func() { done <- serve(ctx, f, nil, errOut) }()
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(15 * time.Second):
				t.Error("serve did not stop")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	addr, admin := testserve.WaitBanner(t, errOut, nil)
	return served{addr: addr, admin: admin, stderr: errOut}, stop
}

// startServe runs serve in process until the test ends, then checks it
// stopped cleanly (exit 0, reload loop included).
func startServe(t *testing.T, config, upstream string) served {
	t.Helper()
	s, stop := serveInProcess(t, serveFlags{config: config, upstream: upstream})
	t.Cleanup(func() { require.Equal(t, 0, stop(), s.stderr.String()) })
	return s
}

// bid posts the request and returns status, X-Bidguard-Rejected and X-Bidguard-Config.
func bid(t *testing.T, addr string) (int, string, string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(reloadReq))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Bidguard-Rejected"), resp.Header.Get("X-Bidguard-Config")
}

// reloadMetrics reads success, error, restart_required and the gauge from
// the admin /metrics.
func reloadMetrics(t *testing.T, admin string) [4]float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	var out [4]float64
	for i, s := range []string{`bidguard_config_reloads_total{result="success"}`, `bidguard_config_reloads_total{result="error"}`,
		`bidguard_config_reloads_total{result="restart_required"}`, `bidguard_config_last_reload_successful`} {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(s) + ` (\S+)$`).FindSubmatch(body)
		require.NotNil(t, m, "%s missing from /metrics", s)
		out[i], err = strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
	}
	return out
}

// waitMetrics waits until the reload metrics equal want.
func waitMetrics(t *testing.T, s served, want [4]float64) {
	t.Helper()
	require.Eventually(t, func() bool { return reloadMetrics(t, s.admin) == want }, 10*time.Second, 10*time.Millisecond,
		"want %v, have %v; stderr: %s", want, reloadMetrics(t, s.admin), s.stderr.String())
}

// settle lets many polls pass (20 ms each).
func settle() { time.Sleep(300 * time.Millisecond) }

func TestServeReloadGateOption(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("20", "10"))
	s := startServe(t, path, fakeBidder(t))
	code, rejected, v1 := bid(t, s.addr)
	require.Equal(t, 200, code)
	require.Equal(t, "0", rejected)
	require.Equal(t, [4]float64{0, 0, 0, 1}, reloadMetrics(t, s.admin))

	writeAtomic(t, path, reloadServeConfig("20", "1"))
	waitMetrics(t, s, [4]float64{1, 0, 0, 1})
	code, rejected, v2 := bid(t, s.addr)
	require.Equal(t, 204, code, "the one bid is over the new maxPrice")
	require.Equal(t, "1", rejected)
	require.NotEqual(t, v1, v2)
	require.Contains(t, s.stderr.String(), "config reloaded")
}

func TestServeReloadNothingChanged(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("20", "10"))
	s := startServe(t, path, fakeBidder(t))
	_, _, v1 := bid(t, s.addr)
	settle()
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(path, future, future)) // touched, same bytes
	writeAtomic(t, path, reloadServeConfig("20", "10"))  // rewritten, same bytes
	settle()
	code, _, v := bid(t, s.addr)
	require.Equal(t, 200, code)
	require.Equal(t, v1, v)
	require.Equal(t, [4]float64{0, 0, 0, 1}, reloadMetrics(t, s.admin))
	require.NotContains(t, s.stderr.String(), "reload")
}

func TestServeReloadBrokenConfig(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("20", "10"))
	s := startServe(t, path, fakeBidder(t))
	_, _, v1 := bid(t, s.addr)

	writeAtomic(t, path, reloadServeConfig("20", "10")+"    - gate: nope\n")
	waitMetrics(t, s, [4]float64{0, 1, 0, 0})
	settle()
	require.Equal(t, [4]float64{0, 1, 0, 0}, reloadMetrics(t, s.admin), "one error per change, not per poll")
	require.Equal(t, 1, strings.Count(s.stderr.String(), "config reload failed"), s.stderr.String())
	code, rejected, v := bid(t, s.addr)
	require.Equal(t, 200, code, "the old config stays")
	require.Equal(t, "0", rejected)
	require.Equal(t, v1, v)

	writeAtomic(t, path, reloadServeConfig("20", "1"))
	waitMetrics(t, s, [4]float64{1, 1, 0, 1})
	code, _, v = bid(t, s.addr)
	require.Equal(t, 204, code)
	require.NotEqual(t, v1, v)
}

// A reload that changes listen applies the rest of the file (maxPrice
// here) and keeps listening where it listens; restart_required says so.
func TestServeReloadListenKept(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("20", "10"))
	s := startServe(t, path, fakeBidder(t))
	_, _, v1 := bid(t, s.addr)

	cfg := strings.Replace(reloadServeConfig("20", "1"), "listen: 127.0.0.1:0", "listen: 127.0.0.1:1", 1)
	writeAtomic(t, path, cfg)
	waitMetrics(t, s, [4]float64{0, 0, 1, 1})
	code, _, v := bid(t, s.addr)
	require.Equal(t, 204, code, "the new maxPrice applies, on the running listener")
	require.NotEqual(t, v1, v)
	require.Contains(t, s.stderr.String(), "keys=[listen]")
	require.Equal(t, 1.0, metricValue(t, s.admin, "bidguard_config_restart_required"))

	writeAtomic(t, path, reloadServeConfig("20", "1"))
	waitMetrics(t, s, [4]float64{1, 0, 1, 1})
	require.Zero(t, metricValue(t, s.admin, "bidguard_config_restart_required"), "listen is back to its running value")
}

func TestServeReloadSeatFile(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("20", "10"))
	s := startServe(t, path, fakeBidder(t))
	_, _, v1 := bid(t, s.addr)

	seat := filepath.Join(filepath.Dir(path), "seats", "s1.yaml")
	writeAtomic(t, seat, "seat: s1\ngateOptions: {rtb.bid-sanity: {options: {maxPrice: 1}}}\n")
	waitMetrics(t, s, [4]float64{1, 0, 0, 1})
	code, rejected, v2 := bid(t, s.addr)
	require.Equal(t, 204, code, "seat s1's own maxPrice applies")
	require.Equal(t, "1", rejected)
	require.NotEqual(t, v1, v2)

	require.NoError(t, os.Remove(seat))
	waitMetrics(t, s, [4]float64{2, 0, 0, 1})
	code, rejected, v3 := bid(t, s.addr)
	require.Equal(t, 200, code, "seat s1 falls back to policy")
	require.Equal(t, "0", rejected)
	require.NotEqual(t, v2, v3)
}

// TestServeSIGHUP runs serve as a child process that polls once an hour:
// only SIGHUP can reload it.
func TestServeSIGHUP(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("3600000", "10"))
	p := testserve.Start(t, testserve.Options{Args: []string{"--config", path, "--upstream", fakeBidder(t)}})
	s := served{addr: p.Addr, admin: p.Admin, stderr: p.Log}

	code, _, v1 := bid(t, s.addr)
	require.Equal(t, 200, code)
	writeAtomic(t, path, reloadServeConfig("3600000", "1"))
	p.Signal(syscall.SIGHUP)
	waitMetrics(t, s, [4]float64{1, 0, 0, 1})
	code, _, v2 := bid(t, s.addr)
	require.Equal(t, 204, code)
	require.NotEqual(t, v1, v2)

	// SIGHUP without a change reloads and keeps the snapshot.
	p.Signal(syscall.SIGHUP)
	waitMetrics(t, s, [4]float64{2, 0, 0, 1})
	_, _, v3 := bid(t, s.addr)
	require.Equal(t, v2, v3)

	p.Stop() // exit 0 after a graceful shutdown
	require.Contains(t, p.Log.String(), "stopped")
}

// log.level applies at a reload: at error nothing of the rejection log
// shows; back at info, it does.
func TestServeReloadLogLevel(t *testing.T) {
	cfg := reloadServeConfig("20", "1")
	path := reloadConfigDir(t, cfg)
	s := startServe(t, path, fakeBidder(t))
	writeAtomic(t, path, cfg+"log: {level: error}\n")
	waitMetrics(t, s, [4]float64{1, 0, 0, 1})
	before := len(s.stderr.String())
	code, rejected, _ := bid(t, s.addr)
	require.Equal(t, 204, code)
	require.Equal(t, "1", rejected)

	writeAtomic(t, path, cfg+"log: {level: info}\n")
	waitMetrics(t, s, [4]float64{2, 0, 0, 1})
	require.NotContains(t, s.stderr.String()[before:], "bid rejected", "info is below error")
	bid(t, s.addr)
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String()[before:], `msg="bid rejected"`) },
		5*time.Second, 5*time.Millisecond, s.stderr.String())
}
