package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// auditCalls records what Options.Audit saw.
type auditCalls struct {
	mu       sync.Mutex
	calls    int
	rejected []string // seat/bid_id/gate
	warned   []string
	panic    bool
}

func (a *auditCalls) hook(snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.panic {
		panic("audit exploded")
	}
	for _, h := range out.Rejected {
		a.rejected = append(a.rejected, h.Seat+"/"+h.BidID+"/"+h.Gate)
	}
	for _, h := range out.Warned {
		a.warned = append(a.warned, h.Seat+"/"+h.BidID+"/"+h.Gate)
	}
}

func (a *auditCalls) seen() (calls int, rejected, warned []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.rejected, a.warned
}

// startAudited is startSidecar with Options.Audit set.
func startAudited(t *testing.T, snap *engine.Snapshot, a *auditCalls) *sidecar {
	t.Helper()
	sc := &sidecar{t: t, holder: &engine.Holder{}}
	sc.holder.Store(snap)
	srv, err := New(sc.holder, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Audit: a.hook})
	require.NoError(t, err)
	sc.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sc.base = "http://" + ln.Addr().String()
	sc.done.Add(1)
	go func() { defer sc.done.Done(); _ = srv.Serve(ln) }()
	t.Cleanup(sc.stop)
	return sc
}

// The audit hook sees every judged response that rejected or would have
// rejected something, and has returned by the time the answer arrives.
func TestAuditHook(t *testing.T) {
	bad := typicalWith(t, `"id": "b3", "impid": "3"`, `"id": "b3", "impid": "9"`)
	for _, tc := range []struct {
		name, extra      string
		resp             []byte
		calls            int
		rejected, warned []string
	}{
		{"clean", "", readFile(t, "typical-response.json"), 0, nil, nil},
		{"rejected", "", bad, 1, []string{"777/b3/rtb.impid-match"}, nil},
		{"shadow", "seats:\n  \"777\": {action: shadow}\n", bad, 1, nil, []string{"777/b3/rtb.impid-match"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testbidder.HTTP(t, testbidder.Answer(200, tc.resp))
			var a auditCalls
			sc := startAudited(t, compile(t, fmt.Sprintf(baseConfig, b.URL)+tc.extra, nil), &a)
			require.Equal(t, 200, sc.post("/bid", withTmax(t, 1000)).status)
			calls, rejected, warned := a.seen() // no waiting: the hook ran before the answer
			require.Equal(t, tc.calls, calls, "not called when nothing was rejected")
			require.Equal(t, tc.rejected, rejected)
			require.Equal(t, tc.warned, warned)
		})
	}
}

// A panic in the hook is answered 204 and counted where="audit".
func TestAuditHookPanic(t *testing.T) {
	b := testbidder.HTTP(t, testbidder.Answer(200, typicalWith(t, `"id": "b3", "impid": "3"`, `"id": "b3", "impid": "9"`)))
	a := auditCalls{panic: true}
	sc := startAudited(t, compile(t, fmt.Sprintf(baseConfig, b.URL), nil), &a)
	require.Equal(t, 204, sc.post("/bid", withTmax(t, 1000)).status)
	require.EqualValues(t, 1, sc.metric(`bidguard_panics_total{where="audit"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="panic"}`))
}

// TestServerLogger: the server and its upstream clients log to
// Options.Logger, and to slog's default logger without one.
func TestServerLogger(t *testing.T) {
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(&engine.Holder{}, Options{Logger: l})
	require.NoError(t, err)
	require.Same(t, l, srv.log)
	require.Same(t, l, srv.clients.log)
	srv, err = New(&engine.Holder{}, Options{})
	require.NoError(t, err)
	require.Same(t, slog.Default(), srv.log)
}
