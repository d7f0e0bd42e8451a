//go:build !race

package rtb

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/bidguard/bidguard/engine"
)

// TestUpstreamClientAllocs: a call through a warm pool (probe, write, read,
// release) allocates nothing, over TCP and over an in-memory listener.
func TestUpstreamClientAllocs(t *testing.T) {
	answer := readFile(t, "typical-response.json")
	bidder := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(answer)
	}}
	f := func(name string, ln net.Listener, dial func(string) (net.Conn, error)) {
		t.Run(name, func(t *testing.T) {
			go func() { _ = bidder.Serve(ln) }()
			t.Cleanup(func() { _ = ln.Close() })
			p := newHostPool(clientKey{addr: ln.Addr().String(), maxConns: 4, idleTimeout: time.Minute}, dial, &newMeters().client)
			t.Cleanup(p.close)
			body := withTmax(t, 100)
			head := plainHead("bidguard/test", len(body))
			resp := fasthttp.AcquireResponse()
			resends := newMeters().none.resends
			call := func() {
				now := time.Now()
				if _, _, err := p.do(head, body, resp, 1<<20, now, now.Add(time.Second), resends); err != nil || resp.StatusCode() != 200 {
					t.Fatal(err, resp.StatusCode())
				}
			}
			// Back to back: the pool fills up (4) and then reuses what it has.
			for range 100 {
				call()
			}
			require.Zero(t, testing.AllocsPerRun(500, call))
			require.Equal(t, answer, resp.Body())
			// With rests: the most recent connection, rested, every time.
			require.Zero(t, testing.AllocsPerRun(100, func() {
				time.Sleep(settleTime)
				call()
			}))
		})
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f("tcp", tcp, nil)
	mem := fasthttputil.NewInmemoryListener()
	f("in-memory", mem, func(string) (net.Conn, error) { return mem.Dial() })
}

// TestRejectionLogAllocs: the rejection log costs nothing for a response
// without hits, and formats nothing once the second's lines are spent.
func TestRejectionLogAllocs(t *testing.T) {
	r := rejectLog{log: slog.New(slog.NewTextHandler(io.Discard, nil)), suppressed: newMeters().logSuppressed}
	none, some := &engine.Outcome{}, hits(3)
	require.Zero(t, testing.AllocsPerRun(100, func() { r.record(10, "dsp", "req", none) }))
	r.record(1, "dsp", "req", some) // spends this second's line
	require.Zero(t, testing.AllocsPerRun(100, func() { r.record(1, "dsp", "req", some) }))
}
