package rtb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// TestHTTPBehaviour walks the table of docs/design.md "HTTP behaviour of serve".
func TestHTTPBehaviour(t *testing.T) {
	sc, b := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), "limits: {maxRequestBytes: 4096}\n")
	version := sc.holder.Load().Version
	req := withTmax(t, 1000)
	f := func(name string, a answer, status int, text ...string) {
		t.Helper()
		require.Equal(t, status, a.status, name)
		require.Equal(t, version, a.header.Get("X-Bidguard-Config"), "%s: every answer carries the config version", name)
		if status >= 400 && status < 500 {
			require.Len(t, text, 1, name)
			require.Equal(t, text[0]+"\n", string(a.body), "%s: 4xx bodies are one line of text", name)
			require.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"), name)
			require.Empty(t, a.header.Get("X-Bidguard-Rejected"), name)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodOptions} {
		a := sc.do(m, "/bid", nil)
		f(m, a, 405, "method not allowed: use POST")
		require.Equal(t, "POST", a.header.Get("Allow"))
	}
	a := sc.do(http.MethodHead, "/bid", nil)
	require.Equal(t, 405, a.status)
	require.Empty(t, a.body, "HEAD answers carry no body")
	f("unrouted path", sc.post("/nope", req), 404, "no upstream routes this path")
	f("prefix is not a match", sc.post("/bid/x", req), 404, "no upstream routes this path")
	f("text/plain", sc.post("/bid", req, "Content-Type: text/plain"), 415, "unsupported Content-Type: use application/json")
	f("form", sc.post("/bid", req, "Content-Type: application/x-www-form-urlencoded"), 415, "unsupported Content-Type: use application/json")
	f("unknown Content-Encoding", sc.post("/bid", req, "Content-Encoding: br"), 415, "unsupported Content-Encoding: use gzip or identity")
	for _, empty := range [][]byte{nil, []byte("  \n")} {
		a := sc.post("/bid", empty)
		require.Equal(t, 400, a.status)
		require.Regexp(t, `^malformed bid request: .*empty.*\n$`, string(a.body))
	}
	malformed := sc.post("/bid", []byte(`{"id":"1","imp":[{"id":"1"}]`))
	require.Equal(t, 400, malformed.status)
	require.Regexp(t, `^malformed bid request: [ -~]+\n$`, string(malformed.body))
	wrongType := sc.post("/bid", []byte(`{"id":"1","imp":[{"id":"1"}],"tmax":"100"}`))
	require.Equal(t, 400, wrongType.status)
	require.Regexp(t, `^malformed bid request: .*tmax.*\n$`, string(wrongType.body), "the decode error says what was wrong")
	require.Equal(t, 400, sc.post("/bid", []byte(`{"id":"1","imp":[{"id":"1"}]} x`)).status, "trailing data")
	f("no id", sc.post("/bid", []byte(`{"imp":[{"id":"1"}]}`)), 400, "malformed bid request: no id")
	f("empty id", sc.post("/bid", []byte(`{"id":"","imp":[{"id":"1"}]}`)), 400, "malformed bid request: no id")
	f("no imp", sc.post("/bid", []byte(`{"id":"1"}`)), 400, "malformed bid request: no imp")
	f("empty imp", sc.post("/bid", []byte(`{"id":"1","imp":[]}`)), 400, "malformed bid request: no imp")
	require.Equal(t, 400, sc.post("/bid", []byte(`null`)).status)
	require.Equal(t, 400, sc.post("/bid", []byte(`[]`)).status)
	// The request's bytes are never echoed: a long key with control
	// characters in a type error is cut to one printable line.
	echo := sc.post("/bid", []byte(`{"id":"1","imp":[{"id":"1"}],"tmax":"\u0007`+strings.Repeat("Z", 500)+`"}`))
	require.Equal(t, 400, echo.status)
	require.NotContains(t, string(echo.body), "ZZZZZZZZZZ")
	require.Regexp(t, `^malformed bid request: [ -~]{1,203}\n$`, string(echo.body))
	big := append(bytes.Repeat([]byte(" "), 5000), req...)
	f("over maxRequestBytes", sc.post("/bid", big), 413, "body over 4096 bytes")
	f("gzip over maxRequestBytes once decoded", sc.post("/bid", gzipped(t, big), "Content-Encoding: gzip"), 413, "body over 4096 bytes")
	f("corrupt gzip", sc.post("/bid", []byte("nope"), "Content-Encoding: gzip"), 400, "malformed bid request: corrupt gzip body")
	require.Zero(t, b.Calls.Load(), "no bidder call for a refused request")

	// Accepted variants reach the bidder.
	f("json with parameters", sc.post("/bid", req, "Content-Type: application/json; charset=utf-8"), 200)
	f("JSON upper case", sc.post("/bid", req, "Content-Type: Application/JSON"), 200)
	f("no Content-Type", sc.post("/bid", req, "Content-Type: -"), 200)
	f("identity", sc.post("/bid", req, "Content-Encoding: identity"), 200)
	f("gzip request", sc.post("/bid", gzipped(t, req), "Content-Encoding: gzip"), 200)
	require.EqualValues(t, 5, b.Calls.Load())
	r := b.Last(t)
	require.Contains(t, string(r.Body), `"imp":`, "the bidder gets the request uncompressed")
	require.Empty(t, r.Get(t, "Content-Encoding"))
}

func TestUnroutedCountedAsNone(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(204, nil), "")
	sc.post("/nope", withTmax(t, 1000))
	sc.do(http.MethodGet, "/nope", nil)
	sc.do(http.MethodGet, "/bid", nil)
	require.EqualValues(t, 2, sc.metric(`bidguard_requests_total{upstream="none",outcome="bad_request"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="bad_request"}`))
}

// TestNoBidderTextInHeaders: only Content-Type comes from the bidder, and
// only when it is JSON.
func TestNoBidderTextInHeaders(t *testing.T) {
	f := func(ct, want string) {
		t.Helper()
		sc, _ := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set("Content-Type", ct)
			h.Set("Set-Cookie", "uid=1")
			h.Set("X-Bidder-Secret", "s3cret")
			h.Set("Server", "bidder/1.0")
			h.Set("Cache-Control", "public")
			h.Set("X-Bidguard-Rejected", "99")
			_, _ = w.Write(readFile(t, "typical-response.json"))
		}, "")
		a := sc.post("/bid", withTmax(t, 1000), "X-Exchange-Secret: e")
		require.Equal(t, 200, a.status)
		require.Equal(t, want, a.header.Get("Content-Type"))
		require.Equal(t, "0", a.header.Get("X-Bidguard-Rejected"))
		for k, v := range a.header {
			switch k {
			case "Content-Type", "Content-Length", "Date", "X-Bidguard-Config", "X-Bidguard-Rejected":
			default:
				t.Errorf("unexpected header %s: %v", k, v)
			}
		}
	}
	f("application/json", "application/json")
	f("application/json; charset=utf-8", "application/json; charset=utf-8")
	f("application/json; charset=iso-8859-1", "application/json")
	f("text/html", "application/json")
	f("application/json; evil=\"x\"", "application/json")
}

func TestPanicRecovered(t *testing.T) {
	reg := gates.Builtin()
	reg["panicky"] = engine.Factory{
		Name: "panicky", ResultName: "test.panicky", Kind: engine.PerBid,
		Options: func() any { return &struct{}{} },
		New:     func(any, engine.Env) (engine.Gate, error) { return panicky{}, nil },
	}
	b := testbidder.HTTP(t, testbidder.Answer(200, readFile(t, "typical-response.json")))
	cfg := fmt.Sprintf(baseConfig, b.URL) + "    - gate: panicky\n"
	sc := startSidecar(t, compile(t, cfg, reg))
	for range 2 {
		a := sc.post("/bid", withTmax(t, 1000))
		require.Equal(t, 204, a.status)
		require.Empty(t, a.body)
		require.Equal(t, sc.holder.Load().Version, a.header.Get("X-Bidguard-Config"))
		require.Empty(t, a.header.Get("Content-Type"))
	}
	require.EqualValues(t, 2, sc.metric(`bidguard_panics_total{where="gate"}`))
	require.EqualValues(t, 2, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="panic"}`))
	require.Zero(t, sc.srv.limiter.InFlight(), "the in-flight slot is given back")
}

type panicky struct{}

func (panicky) Kind() engine.Kind                                  { return engine.PerBid }
func (panicky) Prepare(*engine.Input) string                       { return "" }
func (panicky) CheckBid(*engine.Input, *engine.Bid) engine.Verdict { panic("gate bug") }

func TestReloadSwapsSnapshot(t *testing.T) {
	sc, b := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), "")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, sc.holder.Load().Version, a.header.Get("X-Bidguard-Config"))
	old := a.header.Get("X-Bidguard-Config")
	// The new config routes /other and caps prices below the typical bids.
	next := compile(t, fmt.Sprintf(`
upstreams:
  - {name: dsp, url: "%s", path: /bid}
  - {name: other, url: "%s", path: /other}
policy:
  gates:
    - {gate: bidSanity, options: {maxPrice: 2}}
`, b.URL, b.URL), nil)
	sc.holder.Store(next)
	a = sc.post("/other", withTmax(t, 1000))
	require.Equal(t, 200, a.status)
	require.NotEqual(t, old, a.header.Get("X-Bidguard-Config"))
	require.Equal(t, next.Version, a.header.Get("X-Bidguard-Config"))
	require.Equal(t, []string{"512/b1"}, bidIDs(t, a.body))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="other",outcome="filtered"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="bid"}`), "counters carry on across reloads")
}

func TestSeatLabels(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), `seats:
  "512": {action: shadow}
quarantine: {seats: ["777"]}
`)
	require.Equal(t, 200, sc.post("/bid", withTmax(t, 1000)).status)
	require.EqualValues(t, 2, sc.metric(`bidguard_bids_total{seat="512",verdict="passed"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_bids_total{seat="777",verdict="passed"}`))
	require.Zero(t, sc.metric(`bidguard_bids_total{seat="other",verdict="passed"}`))
}

func TestAdmin(t *testing.T) {
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := client.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Before a config is loaded: not ready.
	empty := startSidecar(t, nil)
	for _, p := range []string{"/healthz", "/readyz"} {
		code, _ := get(empty.admin + p)
		require.Equal(t, 503, code, p)
	}
	require.Equal(t, 503, empty.post("/bid", withTmax(t, 1000)).status)

	sc, _ := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), "")
	for _, p := range []string{"/healthz", "/readyz"} {
		code, _ := get(sc.admin + p)
		require.Equal(t, 200, code, p)
	}
	code, _ := get(sc.admin + "/nope")
	require.Equal(t, 404, code)
	sc.post("/bid", withTmax(t, 1000))
	code, text := get(sc.admin + "/metrics")
	require.Equal(t, 200, code)
	for _, s := range []string{
		`bidguard_requests_total{upstream="dsp",outcome="bid"} 1`,
		`bidguard_bids_total{seat="other",verdict="passed"} 3`,
		`bidguard_upstream_duration_seconds_count{upstream="dsp"} 1`,
		`bidguard_gate_duration_seconds_count{gate="rtb.impid-match"} 1`,
		`bidguard_shed_total{reason="inflight"} 0`,
		`bidguard_shed_total{reason="queue"} 0`,
		`bidguard_panics_total{where="handler"} 0`,
		`bidguard_upstream_errors_total{upstream="dsp",kind="timeout"} 0`,
		"go_goroutines",
	} {
		require.Contains(t, text, s)
	}
	require.NotContains(t, text, "req-typical-1", "never request data in a label")

	// During shutdown: not ready.
	sc.srv.draining.Store(true)
	code, _ = get(sc.admin + "/readyz")
	require.Equal(t, 503, code)
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 204, a.status)
	require.EqualValues(t, 1, sc.metric(`bidguard_shed_total{reason="shutdown"}`))
}

func TestShutdownIsGraceful(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	sc, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		testbidder.Answer(200, readFile(t, "typical-response.json"))(w, r)
	}, "")
	got := make(chan answer, 1)
	go func() { got <- sc.post("/bid", withTmax(t, 1000)) }()
	<-entered
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- sc.srv.Shutdown(ctx)
	}()
	require.Eventually(t, func() bool { return !sc.srv.Ready() }, 5*time.Second, time.Millisecond, "shutdown began")
	close(release)
	a := <-got
	require.Equal(t, 200, a.status, "the request in flight is answered")
	require.NoError(t, <-done)
	require.False(t, sc.srv.Ready())
	_, err := client.Post(sc.base+"/bid", "application/json", strings.NewReader("{}"))
	require.Error(t, err, "no longer listening")
}

// TestDrain: after Drain, /readyz answers 503 while the exchange listener
// keeps accepting and judging (a new connection included); its answers
// close their connections. Shutdown then stops accepting.
func TestDrain(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), "")
	ready := func() int {
		resp, err := client.Get(sc.admin + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 200, ready())
	post := func() *http.Response {
		resp, err := client.Post(sc.base+"/bid", "application/json", bytes.NewReader(withTmax(t, 1000)))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post()
	require.Equal(t, 200, resp.StatusCode)
	require.False(t, resp.Close)

	sc.srv.Drain()
	require.Equal(t, 503, ready(), "not ready at once")
	require.False(t, sc.srv.Ready())
	for range 3 {
		resp = post()
		require.Equal(t, 200, resp.StatusCode, "still judged and answered")
		require.True(t, resp.Close, "Connection: close: the client reconnects, through the balancer")
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Post(sc.base+"/bid", "application/json", bytes.NewReader(withTmax(t, 1000)))
	require.NoError(t, err, "a new connection is accepted during the drain")
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Zero(t, sc.srv.Metrics().GetOrCreateCounter(`bidguard_shed_total{reason="shutdown"}`).Get(), "nothing shed")
}

func TestDemoBidder(t *testing.T) {
	d := NewDemoBidder()
	url := serveOnLoopback(t, d)
	sc := startSidecar(t, compile(t, fmt.Sprintf(baseConfig, url)+"    - gate: adomainVerify\n", nil))
	// Every answer holds a good and a bad bid per imp (at most three); the
	// bad kind rotates, and each kind is removed by the gates.
	for i := range 4 {
		a := sc.post("/bid", withTmax(t, 1000))
		require.Equal(t, 200, a.status, "request %d (%s)", i, sc.failureCounts())
		require.Equal(t, "3", a.header.Get("X-Bidguard-Rejected"), "request %d", i)
		require.NotContains(t, string(a.body), `"bad-`, "request %d", i)
		require.Contains(t, string(a.body), `"good-1"`, "request %d", i)
	}
}

// TestDemoBidderBannerSize: a banner's size is its w×h when it has both,
// else its first format with both; a banner with only w or only h (or no
// size at all) gets a bid without one, and no crash.
func TestDemoBidderBannerSize(t *testing.T) {
	d := NewDemoBidder()
	f := func(banner, want string) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		ctx.Request.SetBodyString(`{"id":"r","imp":[{"id":"1","banner":` + banner + `}]}`)
		d.handle(&ctx)
		require.Equal(t, 200, ctx.Response.StatusCode(), banner)
		var r struct {
			SeatBid []struct {
				Bid []struct {
					W *int64 `json:"w"`
					H *int64 `json:"h"`
				} `json:"bid"`
			} `json:"seatbid"`
		}
		require.NoError(t, json.Unmarshal(ctx.Response.Body(), &r))
		good := r.SeatBid[0].Bid[0]
		got := "none"
		if good.W != nil && good.H != nil {
			got = fmt.Sprintf("%dx%d", *good.W, *good.H)
		}
		require.Equal(t, want, got, banner)
	}
	f(`{"w":300,"h":250}`, "300x250")
	f(`{"w":300}`, "none")
	f(`{"h":250}`, "none")
	f(`{}`, "none")
	f(`{"w":300,"format":[{"w":728,"h":90}]}`, "728x90")
	f(`{"h":250,"format":[{"w":0,"h":90},{"w":320,"h":50}]}`, "320x50")
}
