package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// startWith is startSidecar with options (hooks) of the test's.
func startWith(t *testing.T, snap *engine.Snapshot, opt Options) *sidecar {
	t.Helper()
	sc := &sidecar{t: t, holder: &engine.Holder{}}
	sc.holder.Store(snap)
	opt.Version, opt.Logger = "test", slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(sc.holder, opt)
	require.NoError(t, err)
	sc.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sc.base, sc.admin = "http://"+ln.Addr().String(), "http://"+aln.Addr().String()
	sc.done.Add(2)
	go func() { defer sc.done.Done(); _ = srv.Serve(ln) }()
	go func() { defer sc.done.Done(); _ = srv.ServeAdmin(aln) }()
	t.Cleanup(sc.stop)
	return sc
}

// Judged sees every judged response, clean ones included, with the
// upstream's name, before the answer; never a response that was not judged.
func TestJudgedHook(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	hook := func(upstream string, snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s %d bids %d rejected", upstream, len(ev.In.Bids), len(out.Rejected)))
	}
	resp := readFile(t, "typical-response.json")
	bad := typicalWith(t, `"id": "b3", "impid": "3"`, `"id": "b3", "impid": "9"`)
	var body atomic.Pointer[[]byte] // the race detector sees no order through the socket
	b := testbidder.HTTP(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if *body.Load() == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*body.Load())
	})
	sc := startWith(t, compile(t, fmt.Sprintf(baseConfig, b.URL), nil), Options{Judged: hook})
	for _, tc := range []struct {
		body   []byte
		status int
	}{{resp, 200}, {bad, 200}, {nil, 204}, {[]byte("{not json"), 204}} {
		body.Store(&tc.body)
		require.Equal(t, tc.status, sc.post("/bid", withTmax(t, 1000)).status)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"dsp 3 bids 0 rejected", "dsp 3 bids 1 rejected"}, seen)
}

// The quarantine handler answers /quarantine and the paths under it on the
// admin listener, with the config header; other paths stay the server's.
func TestQuarantineAdminRoute(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	})
	snap := compile(t, fmt.Sprintf(baseConfig, "http://127.0.0.1:1/"), nil)
	sc := startWith(t, snap, Options{Quarantine: h})
	get := func(method, path string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(method, sc.admin+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer x")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get(hdrConfig)
	}
	code, body, cfg := get("GET", "/quarantine")
	require.Equal(t, 200, code)
	require.Equal(t, "GET /quarantine Bearer x", body)
	require.Equal(t, snap.Version, cfg)
	code, body, _ = get("POST", "/quarantine/dsp-a%2F512/release")
	require.Equal(t, 200, code)
	require.Equal(t, "POST /quarantine/dsp-a/512/release Bearer x", body)
	code, _, _ = get("GET", "/quarantines")
	require.Equal(t, 404, code)
	code, _, _ = get("GET", "/metrics")
	require.Equal(t, 200, code)

	plain := startSidecar(t, snap)
	resp, err := client.Get(plain.admin + "/quarantine")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode, "no handler: no endpoint")
}
