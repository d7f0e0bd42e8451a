package faults

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

func TestProcessSIGTERMUnderLoad(t *testing.T) {
	slow(t)
	scenario(t, "process/sigterm-under-load")
	b := goodBidder(t, 5*time.Millisecond)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	done := make(chan loadResult, 1)
	go func() {
		done <- runLoad(t, loadSpec{addr: p.addr, conns: 32, rate: 800, dur: 3 * time.Second, tmaxMs: 200})
	}()
	time.Sleep(time.Second)
	sent := time.Now()
	p.stop() // exit 0
	require.Less(t, time.Since(sent), 5*time.Second, "shutdown within the drain and the longest tmax")
	res := <-done
	t.Logf("load around SIGTERM: %s", res)
	require.Positive(t, res.answered)
	require.LessOrEqual(t, res.lateShare(), 0.01, "answers by the deadline, SIGTERM or not")
}

func TestProcessSIGTERMHungBidder(t *testing.T) {
	scenario(t, "process/sigterm-hung-bidder")
	b := testbidder.Raw(t, testbidder.Hang) // never answers; returns when bidguard or the test closes it
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	const n = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var statuses []int
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, took := post(t, p.addr, bidRequest(fmt.Sprint("hung", i), 500))
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, a.status)
			require.LessOrEqual(t, took, 495*time.Millisecond+deadlineTolerance)
		}()
	}
	require.Eventually(t, func() bool { return b.Calls.Load() >= n }, 10*time.Second, 5*time.Millisecond, "every request in flight at the bidder")
	start := time.Now()
	p.stop()
	require.Less(t, time.Since(start), 3*time.Second, "in-flight requests end at their deadline, then the process exits")
	wg.Wait()
	for _, s := range statuses {
		require.Equal(t, 204, s)
	}
}

func TestProcessKill9Restart(t *testing.T) {
	scenario(t, "process/kill9-restart")
	b := goodBidder(t, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := startProc(t, procOpts{upstream: b.URL + "/bid", args: []string{"--listen", addr}})
	// Keep-alive connections and a request in flight when the process dies.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.Done()
	start := time.Now()
	p2 := startProc(t, procOpts{upstream: b.URL + "/bid", args: []string{"--listen", addr}})
	require.Equal(t, addr, p2.addr)
	a, _ := post(t, p2.addr, bidRequest("after-restart", 500))
	require.Equal(t, 200, a.status)
	require.Less(t, time.Since(start), 10*time.Second)
	p2.healthy()
}

func TestProcessPanicInGate(t *testing.T) {
	scenario(t, "process/panic-gate")
	b := newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		id := requestID(body)
		bidID := "b1"
		if id == "panic" {
			bidID = "panic"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":%q,"seatbid":[{"seat":"s1","bid":[{"id":%q,"impid":"1","price":1,"adomain":["a.example"],"crid":"c","adm":"x"}]}]}`, id, bidID)
	})
	p := startProc(t, procOpts{variant: binInject, upstream: b.URL + "/bid",
		policy: policyYAML + "    - gate: faultPanic\n"})
	for range 3 {
		a, _ := post(t, p.addr, bidRequest("panic", 500))
		require.Equal(t, 204, a.status)
		a, _ = post(t, p.addr, bidRequest("fine", 500))
		require.Equal(t, 200, a.status, "the next request is served")
	}
	require.EqualValues(t, 3, p.metric(`bidguard_panics_total{where="gate"}`))
	require.EqualValues(t, 3, p.metric(`bidguard_requests_total{upstream="dsp",outcome="panic"}`))
	p.healthy()
}

func TestProcessPanicInUpstreamCall(t *testing.T) {
	scenario(t, "process/panic-upstream")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{variant: binInject, upstream: b.URL + "/bid", upName: "fault-panic"})
	for range 3 {
		a, _ := post(t, p.addr, bidRequest("x", 500))
		require.Equal(t, 204, a.status)
	}
	require.EqualValues(t, 3, p.metric(`bidguard_panics_total{where="upstream"}`))
	require.Zero(t, b.Calls.Load())
	p.healthy()
}

// TestProcessSIGTERMIdleKeepAlive: a request sent on an idle keep-alive
// connection just after SIGTERM is answered 204 with Connection: close.
func TestProcessSIGTERMIdleKeepAlive(t *testing.T) {
	scenario(t, "process/sigterm-idle-keepalive")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	_, err = c.Write(httpRequest(bidRequest("first", 500)))
	require.NoError(t, err)
	a, err := readResponse(br)
	require.NoError(t, err)
	require.Equal(t, 200, a.status)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { // the shutdown began: /readyz turns 503, or the admin listener is gone
		resp, err := http.Get("http://" + p.admin + "/readyz")
		if err != nil {
			return true
		}
		_ = resp.Body.Close()
		return resp.StatusCode != http.StatusOK
	}, 10*time.Second, 5*time.Millisecond)
	_, err = c.Write(httpRequest(bidRequest("after-sigterm", 500)))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	a, err = readResponse(br)
	require.NoError(t, err, "answered, not refused")
	require.Equal(t, 204, a.status)
	require.Equal(t, "close", a.header["connection"])
	<-p.Done()
	require.NoError(t, p.Err())
}
