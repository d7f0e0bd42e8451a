package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/internal/testserve"
)

// loopbackConfig is the embedded config listening on free loopback ports,
// without a drain.
func loopbackConfig(t *testing.T) string {
	t.Helper()
	cfg := string(configs.Default)
	cfg = regexp.MustCompile(`(?m)^listen: .*$`).ReplaceAllString(cfg, "listen: 127.0.0.1:0")
	cfg = regexp.MustCompile(`(?m)^adminListen: .*$`).ReplaceAllString(cfg, "adminListen: 127.0.0.1:0")
	// No drain: these tests stop serve at once (TestServeDrain sets its own).
	cfg = regexp.MustCompile(`(?m)^shutdown: .*$`).ReplaceAllString(cfg, "shutdown: {drainMs: 0}")
	path := filepath.Join(t.TempDir(), "bidguard.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func TestMain(m *testing.M) {
	code := m.Run()
	testserve.RemoveBuilds()
	os.Exit(code)
}

func TestServeStartupErrors(t *testing.T) {
	dir := files(t, "broken.yaml", "policy: {gates: [{gate: nope}]}\n", "unknown.yaml", "listen: 127.0.0.1:0\nnope: 1\n")
	f := func(want int, args ...string) string {
		t.Helper()
		start := time.Now()
		code, out, errOut := runCmd(append([]string{"serve"}, args...)...)
		require.Equal(t, want, code, errOut)
		require.Empty(t, out, "nothing listened")
		require.Less(t, time.Since(start), 5*time.Second)
		return errOut
	}
	require.Contains(t, f(1, "--config", filepath.Join(dir, "broken.yaml")), `level=ERROR msg="serve: start-up failed" error=`)
	require.Contains(t, f(1, "--config", filepath.Join(dir, "broken.yaml")), "nope")
	require.Contains(t, f(1, "--config", filepath.Join(dir, "unknown.yaml")), "nope")
	f(1, "--config", filepath.Join(dir, "missing.yaml"))
	f(2, "--bogus")
	f(2, "extra-arg")
	f(2, "--demo", "--upstream", "http://127.0.0.1:1/")
	f(2, "--upstream", "ftp://bidder/")
	require.Contains(t, f(2, "--upstream", "http://u:p@127.0.0.1:1/"), "credentials in the URL are not supported")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	require.Contains(t, f(1, "--config", loopbackConfig(t), "--listen", busy.Addr().String()), "address already in use")
}

// TestServeDemo runs serve --demo on the embedded policy with the README's
// quick-start request: every answer of the demo bidder is filtered (a bad
// bid per imp removed, the good ones forwarded) and each removal is logged.
func TestServeDemo(t *testing.T) {
	s, stop := serveInProcess(t, serveFlags{config: loopbackConfig(t), demo: true})
	addr, errOut := s.addr, s.stderr

	req, err := os.ReadFile("../../configs/demo/request.json")
	require.NoError(t, err)
	for i := range 4 {
		resp, err := http.Post("http://"+addr+"/any/path", "application/json", bytes.NewReader(req))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "request %d; stderr: %s", i, errOut.String())
		require.Equal(t, "2", resp.Header.Get("X-Bidguard-Rejected"), "request %d", i)
		require.Contains(t, string(body), `"good-1"`)
		require.Contains(t, string(body), `"good-2"`)
		require.NotContains(t, string(body), `"bad-`)
	}
	for _, gate := range []string{"rtb.impid-match", "rtb.bid-sanity", "rtb.adomain-verify"} {
		require.Contains(t, errOut.String(), "gate="+gate, "the rejection log names the gate")
	}
	require.Equal(t, 0, stop())
}

func TestServeSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := testserve.Start(t, testserve.Options{Args: []string{"--config", loopbackConfig(t), "--upstream", "http://127.0.0.1:1/"}})

			resp, err := http.Get("http://" + p.Admin + "/readyz")
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
			// The bidder refuses connections: a 204 by the deadline.
			resp, err = http.Post("http://"+p.Addr+"/", "application/json", strings.NewReader(`{"id":"r","imp":[{"id":"1"}]}`))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 204, resp.StatusCode)

			p.Signal(sig)
			exited, err := p.Wait(15 * time.Second)
			require.True(t, exited, "serve did not stop; stderr: %s", p.Log)
			require.NoError(t, err, "exit 0 after a graceful shutdown; stderr: %s", p.Log)
			require.Contains(t, p.Log.String(), "stopped")
		})
	}
}

// TestServeAdminFlag: --admin replaces adminListen, so two sidecars with one
// config run side by side; a reload keeps the flag (no restart_required).
func TestServeAdminFlag(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	cfg := reloadServeConfig("20", "10")
	cfg = strings.Replace(cfg, "adminListen: 127.0.0.1:0", "adminListen: "+busy.Addr().String(), 1)
	path := reloadConfigDir(t, cfg)
	require.Contains(t, f1(t, path), "address already in use", "without --admin the config's port is taken")

	var admins []string
	for range 2 {
		s, stop := serveInProcess(t, serveFlags{config: path, admin: "127.0.0.1:0", upstream: fakeBidder(t)})
		t.Cleanup(func() { require.Equal(t, 0, stop(), s.stderr.String()) })
		require.NotEqual(t, busy.Addr().String(), s.admin)
		admins = append(admins, s.admin)
		code, _, _ := bid(t, s.addr)
		require.Equal(t, 200, code)
	}
	require.NotEqual(t, admins[0], admins[1])
	writeAtomic(t, path, strings.Replace(cfg, "maxPrice: 10", "maxPrice: 1", 1))
	for _, a := range admins {
		waitMetrics(t, served{admin: a, stderr: &testserve.Buffer{}}, [4]float64{1, 0, 0, 1})
	}
}

// f1 runs serve with --config path and returns its stderr; it must fail.
func f1(t *testing.T, path string) string {
	t.Helper()
	code, _, errOut := runCmd("serve", "--config", path, "--upstream", "http://127.0.0.1:1/")
	require.Equal(t, 1, code)
	return errOut
}

// serve logs through slog: --log-format json makes every line a JSON
// object (the banner included); --log-level error keeps info and warn out.
func TestServeLogFlags(t *testing.T) {
	run := func(f serveFlags) (*testserve.Buffer, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var errOut testserve.Buffer
		done := make(chan int, 1)
		f.config = loopbackConfig(t)
		go func() { done <- serve(ctx, f, nil, &errOut) }()
		return &errOut, func() { cancel(); require.Equal(t, 0, <-done, errOut.String()) }
	}
	errOut, stop := run(serveFlags{logFormat: "json"})
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), `"listen"`) }, 10*time.Second, 5*time.Millisecond)
	stop()
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		require.Contains(t, rec, "level")
	}
	require.Contains(t, errOut.String(), `"msg":"serving","version":"dev"`)
	require.Contains(t, errOut.String(), `"level":"WARN","msg":"no upstreams configured`)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	admin := ln.Addr().String()
	require.NoError(t, ln.Close())
	errOut, stop = run(serveFlags{logLevel: "error", admin: admin})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	stop()
	require.Empty(t, errOut.String(), "nothing at error level")

	for _, args := range [][]string{{"--log-level", "loud"}, {"--log-format", "xml"}} {
		code, _, errOut := runCmd(append([]string{"serve"}, args...)...)
		require.Equal(t, 2, code)
		require.Contains(t, errOut, "serve: "+args[0]+": ")
	}
}
