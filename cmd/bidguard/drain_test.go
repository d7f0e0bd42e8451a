package main

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testserve"
)

// startServeProcess runs `bidguard serve` as a child with a copy of the
// loopback config whose shutdown.drainMs is drainMs, and returns it once
// it serves.
func startServeProcess(t *testing.T, drainMs string) *testserve.Proc {
	t.Helper()
	path := loopbackConfig(t)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cfg := regexp.MustCompile(`(?m)^shutdown: .*$`).ReplaceAllString(string(data), "shutdown: {drainMs: "+drainMs+"}")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return testserve.Start(t, testserve.Options{Args: []string{"--config", path, "--upstream", fakeBidder(t)}})
}

// TestServeDrain: after SIGTERM, /readyz answers 503 at once while both
// listeners keep accepting and answering: clients that keep sending, on
// keep-alive and on new connections, see no refused connection and no
// failed request; answers carry Connection: close. A second SIGTERM ends
// the drain (here long: 60 s), and serve exits 0.
func TestServeDrain(t *testing.T) {
	p := startServeProcess(t, "60000")
	addr, admin := p.Addr, p.Admin
	body := reloadReq
	want, _, _ := bid(t, addr) // what the bidder's answer comes to before the signal
	require.Contains(t, []int{200, 204}, want)

	var signalled atomic.Bool
	var (
		mu       sync.Mutex
		failures []string
	)
	afterSignal := make([]atomic.Int64, 4) // bids answered 200 after SIGTERM, per client
	closed := atomic.Int64{}               // answers after SIGTERM with Connection: close
	sent := atomic.Int64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range afterSignal {
		// Clients 0 and 1 keep their connections alive, 2 and 3 open one per request.
		tr := &http.Transport{DisableKeepAlives: i >= 2}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				after := signalled.Load()
				sent.Add(1)
				resp, err := c.Post("http://"+addr+"/", "application/json", strings.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				switch {
				case err != nil:
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
				case resp.StatusCode != want:
					mu.Lock()
					failures = append(failures, resp.Status)
					mu.Unlock()
				case after:
					afterSignal[i].Add(1)
					if resp.Close {
						closed.Add(1)
					}
				}
			}
		})
	}
	readyz := func() int {
		resp, err := http.Get("http://" + admin + "/readyz")
		require.NoError(t, err, "the admin listener accepts during the drain")
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 200, readyz())
	// Some load before the signal, so that keep-alive connections are open.
	require.Eventually(t, func() bool { return sent.Load() > 40 }, 10*time.Second, time.Millisecond)

	signalled.Store(true)
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return readyz() == 503 }, 10*time.Second, 5*time.Millisecond, "/readyz turns 503")
	require.Eventually(t, func() bool {
		for i := range afterSignal {
			if afterSignal[i].Load() < 50 {
				return false
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, "every client keeps being answered during the drain; failures: %v", &failures)
	close(stop)
	wg.Wait()
	mu.Lock()
	require.Empty(t, failures, "no refused connection, no failed request during the drain")
	mu.Unlock()
	require.Positive(t, closed.Load(), "answers during the drain close their connection")
	require.Equal(t, 503, readyz())

	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.Done():
		require.NoError(t, p.Err(), "exit 0; stderr: %s", p.Log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("a second SIGTERM did not end the drain; stderr: %s", p.Log.String())
	}
	require.Contains(t, p.Log.String(), "draining: /readyz answers 503")
	require.Contains(t, p.Log.String(), "drain cut short")
	require.Contains(t, p.Log.String(), "stopped")
}

// TestServeDrainEnds: the drain ends by itself after drainMs, then serve
// stops accepting and exits 0.
func TestServeDrainEnds(t *testing.T) {
	p := startServeProcess(t, "200")
	resp, err := http.Post("http://"+p.Addr+"/", "application/json", strings.NewReader(`{"id":"r","imp":[{"id":"1"}]}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.Done():
		require.NoError(t, p.Err(), "exit 0; stderr: %s", p.Log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop after the drain; stderr: %s", p.Log.String())
	}
	require.Contains(t, p.Log.String(), "drainMs=200")
	require.Contains(t, p.Log.String(), "drain over: shutting down")
	_, err = http.Get("http://" + p.Addr + "/")
	require.Error(t, err, "nothing listens any more")
}

// SIGINT (Ctrl-C at a terminal) stops at once, without the drain.
func TestServeSIGINTSkipsDrain(t *testing.T) {
	p := startServeProcess(t, "60000")
	require.NoError(t, p.Cmd.Process.Signal(os.Interrupt))
	select {
	case <-p.Done():
		require.NoError(t, p.Err(), "exit 0; stderr: %s", p.Log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("SIGINT waited for the drain; stderr: %s", p.Log.String())
	}
	require.NotContains(t, p.Log.String(), "draining")
	require.Contains(t, p.Log.String(), "stopped")
}
