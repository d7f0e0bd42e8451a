package rtb

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// captureCall is what Options.Capture saw of one auction.
type captureCall struct {
	upstream          string
	request, response string
	latencyKnown      bool
	arrivalSet        bool
	bids, kept        int
}

// The capture hook sees every judged response, clean ones included, with
// the documents as received: the exchange's body after its gzip, the
// bidder's answer after its gzip; not an answer that was never judged.
func TestCaptureHook(t *testing.T) {
	clean := readFile(t, "typical-response.json")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(clean)
	require.NoError(t, zw.Close())
	status, body, encoding := 200, clean, ""
	var mu sync.Mutex
	b := testbidder.HTTP(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if encoding != "" {
			w.Header().Set("Content-Encoding", encoding)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	var calls []captureCall
	hook := func(up string, _ *engine.Snapshot, ev *engine.Eval, out *engine.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, captureCall{upstream: up, request: string(ev.In.RawRequest), response: string(ev.In.RawResponse),
			latencyKnown: ev.In.LatencyKnown, arrivalSet: !ev.In.Arrival.IsZero(), bids: len(out.Bids), kept: out.Kept})
	}
	sc := &sidecar{t: t, holder: &engine.Holder{}}
	sc.holder.Store(compile(t, fmt.Sprintf(baseConfig, b.URL), nil))
	srv, err := New(sc.holder, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Capture: hook})
	require.NoError(t, err)
	sc.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sc.base = "http://" + ln.Addr().String()
	sc.done.Add(1)
	go func() { defer sc.done.Done(); _ = srv.Serve(ln) }()
	t.Cleanup(sc.stop)

	req := withTmax(t, 1000)
	require.Equal(t, 200, sc.post("/bid", req).status)
	var zreq bytes.Buffer
	zw = gzip.NewWriter(&zreq)
	_, _ = zw.Write(req)
	require.NoError(t, zw.Close())
	mu.Lock()
	body, encoding = gz.Bytes(), "gzip"
	mu.Unlock()
	require.Equal(t, 200, sc.post("/bid", zreq.Bytes(), "Content-Encoding: gzip").status)
	mu.Lock()
	status = 204
	mu.Unlock()
	require.Equal(t, 204, sc.post("/bid", req).status)

	mu.Lock()
	defer mu.Unlock()
	want := captureCall{upstream: "dsp", request: string(req), response: string(clean), latencyKnown: true, arrivalSet: true, bids: 3, kept: 3}
	require.Equal(t, []captureCall{want, want}, calls, "the hook ran before each answer; not for the 204")
}
