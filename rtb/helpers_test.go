package rtb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// baseConfig is the policy most tests run: the gates built so far.
const baseConfig = `
upstreams:
  - {name: dsp, url: "%s", path: /bid}
policy:
  gates:
    - gate: tmaxGuard
      options: {bufferMs: 5}
    - gate: impidMatch
    - gate: bidSanity
      options: {maxFloorMultiple: 50}
`

func compile(t testing.TB, yaml string, reg engine.Registry) *engine.Snapshot {
	t.Helper()
	if reg == nil {
		reg = gates.Builtin()
	}
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(yaml), reg)
	require.NoError(t, err)
	return snap
}

// sidecar is a Server on real loopback TCP listeners.
type sidecar struct {
	t      *testing.T
	srv    *Server
	holder *engine.Holder
	base   string // http://127.0.0.1:port
	admin  string
	done   sync.WaitGroup
}

func startSidecar(t *testing.T, snap *engine.Snapshot) *sidecar {
	t.Helper()
	return startSidecarWith(t, snap, nil)
}

// startSidecarWith lets tune change the Server before it serves.
func startSidecarWith(t *testing.T, snap *engine.Snapshot, tune func(*Server)) *sidecar {
	t.Helper()
	sc := &sidecar{t: t, holder: &engine.Holder{}}
	if snap != nil {
		sc.holder.Store(snap)
	}
	srv, err := New(sc.holder, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Drain: 20 * time.Millisecond})
	require.NoError(t, err)
	sc.srv = srv
	if tune != nil {
		tune(srv)
	}
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

func (sc *sidecar) stop() {
	// The exchange's idle connections go first: a sidecar started later on
	// the same port must not get requests over them.
	client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = sc.srv.Shutdown(ctx)
	sc.done.Wait()
}

// answer is what the exchange got.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	elapsed time.Duration
}

var client = &http.Client{
	Timeout:       10 * time.Second,
	Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// post sends body to path; hdr holds extra headers as "Key: value" pairs
// (Content-Type defaults to application/json unless given, "-" removes it).
func (sc *sidecar) post(path string, body []byte, hdr ...string) answer {
	return sc.do(http.MethodPost, path, body, hdr...)
}

func (sc *sidecar) do(method, path string, body []byte, hdr ...string) answer {
	sc.t.Helper()
	req, err := http.NewRequest(method, sc.base+path, bytes.NewReader(body))
	require.NoError(sc.t, err)
	req.Header.Set("Content-Type", "application/json")
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if v == "-" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := client.Do(req)
	require.NoError(sc.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(sc.t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, elapsed: time.Since(start)}
}

// metric returns one series' value from the server's /metrics text (0 when absent).
func (sc *sidecar) metric(series string) float64 {
	sc.t.Helper()
	var b bytes.Buffer
	sc.srv.WriteMetrics(&b)
	s := bufio.NewScanner(&b)
	for s.Scan() {
		name, val, ok := strings.Cut(s.Text(), " ")
		if ok && name == series {
			f, err := strconv.ParseFloat(val, 64)
			require.NoError(sc.t, err)
			return f
		}
	}
	return 0
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

// withTmax returns the typical request with its tmax replaced.
func withTmax(t testing.TB, tmax int) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(readFile(t, "typical-request.json"), &m))
	m["tmax"] = json.RawMessage(strconv.Itoa(tmax))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// setup starts a bidder with h and a sidecar in front of it running
// baseConfig plus extra YAML.
func setup(t *testing.T, h http.HandlerFunc, extra string) (*sidecar, *testbidder.Bidder) {
	t.Helper()
	b := testbidder.HTTP(t, h)
	snap := compile(t, fmt.Sprintf(baseConfig, b.URL)+extra, nil)
	return startSidecar(t, snap), b
}

// bidIDs decodes an answer with encoding/json and lists its bid ids by seat.
func bidIDs(t testing.TB, body []byte) []string {
	t.Helper()
	var r struct {
		SeatBid []struct {
			Seat string `json:"seat"`
			Bid  []struct {
				ID string `json:"id"`
			} `json:"bid"`
		} `json:"seatbid"`
	}
	require.NoError(t, json.Unmarshal(body, &r))
	var ids []string
	for _, sb := range r.SeatBid {
		for _, b := range sb.Bid {
			ids = append(ids, sb.Seat+"/"+b.ID)
		}
	}
	return ids
}

func serveOnLoopback(t *testing.T, d *DemoBidder) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Serve(ln) }()
	t.Cleanup(func() { _ = d.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// rawExchange sends one raw HTTP/1.1 request (head lines without the
// final blank line; Content-Length is added) and its body to the sidecar
// and returns the answer, its body read whole.
func (sc *sidecar) rawExchange(head string, body []byte) (*http.Response, []byte) {
	sc.t.Helper()
	u, err := url.Parse(sc.base)
	require.NoError(sc.t, err)
	c, err := net.Dial("tcp", u.Host)
	require.NoError(sc.t, err)
	defer c.Close()
	_, err = io.WriteString(c, head+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+string(body))
	require.NoError(sc.t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(sc.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(sc.t, err)
	return resp, b
}
