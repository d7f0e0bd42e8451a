package faults

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// smuggled is a well-formed bid request hidden behind an ambiguous one.
var smuggled = string(httpRequest(bidRequest("smuggled", 500)))

// smugglingProbes: first requests whose framing a proxy in front could read
// another way than bidguard would; what follows is the smuggled request.
var smugglingProbes = map[string]string{
	"CL then TE":               "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"TE then CL":               "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
	"CHUNKED":                  "Content-Length: 5\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n",
	"tab before the value":     "Content-Length: 5\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
	"obs-fold":                 "Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
	"TE behind a bare LF":      "Content-Length: 5\r\nX-A: 1\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"head ended by bare LFs":   "Content-Length: 5\n\n0\r\n\r\n",
	"TE twice":                 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"TE list":                  "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"space before the colon":   "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
	"CL twice":                 "Content-Length: 5\r\nContent-Length: 0\r\n\r\n0\r\n\r\n",
	"CL list":                  "Content-Length: 5, 5\r\n\r\n0\r\n\r\n",
	"chunk size with OWS":      "Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
	"chunk ext with a bare LF": "Transfer-Encoding: chunked\r\n\r\n5;a\nhello\r\n0\r\n\r\n",
	"HTTP/1.0 chunked":         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
}

func TestExchangeSmuggling(t *testing.T) {
	scenario(t, "exchange/smuggling")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	for name, rest := range smugglingProbes {
		proto := "HTTP/1.1"
		if strings.HasPrefix(name, "HTTP/1.0") {
			proto = "HTTP/1.0"
		}
		answers, closed := exchangeRaw(t, p.addr, []byte("POST /bid "+proto+"\r\nHost: x\r\n"+rest+smuggled), 5*time.Second)
		require.Len(t, answers, 1, name)
		require.Equal(t, 400, answers[0].status, name)
		require.True(t, closed, "%s: the connection is closed", name)
		require.NotContains(t, string(answers[0].body), "smuggled", name)
	}
	require.Zero(t, b.Calls.Load(), "no request reached the bidder")
	p.healthy()
}

func TestExchangeFraming(t *testing.T) {
	scenario(t, "exchange/framing")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	// Well-framed requests pipelined on one connection: one bidder call each.
	chunkBody := bidRequest("chunked", 500)
	chunked := "POST /bid HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(chunkBody)), 16) + "\r\n" + string(chunkBody) + "\r\n0\r\n\r\n"
	raw := smuggled + chunked + string(httpRequest(bidRequest("third", 500), "Connection: close"))
	answers, closed := exchangeRaw(t, p.addr, []byte(raw), 5*time.Second)
	require.True(t, closed)
	require.Len(t, answers, 3)
	for _, a := range answers {
		require.Equal(t, 200, a.status)
		checkAnswer(t, a)
	}
	require.EqualValues(t, 3, b.Calls.Load())

	for name, tc := range map[string]struct {
		raw    string
		status int
	}{
		"no Host":            {"POST /bid HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 400},
		"garbage":            {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400},
		"HTTP/2 preface":     {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 405},
		"headers over 4 KiB": {"POST /bid HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8000) + "\r\n\r\n", 431},
		"bad method":         {"P\x00ST /bid HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		"bad version":        {"POST /bid HTTP/9.9\r\nHost: x\r\n\r\n", 400},
	} {
		answers, closed := exchangeRaw(t, p.addr, []byte(tc.raw), 5*time.Second)
		require.True(t, closed, name)
		require.NotEmpty(t, answers, name)
		require.Equal(t, tc.status, answers[0].status, name)
	}
	require.EqualValues(t, 3, b.Calls.Load())
	p.healthy()
}

func TestExchangeBodies(t *testing.T) {
	scenario(t, "exchange/bodies")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid", extra: "limits: {maxRequestBytes: 8192, idleTimeoutMs: 1000}\n"})
	req := bidRequest("r1", 500)
	padded := append(bytes.Repeat([]byte(" "), 9000), req...)
	for name, tc := range map[string]struct {
		body   []byte
		hdr    []string
		status int
		text   string
	}{
		"over maxRequestBytes":        {padded, nil, 413, "body over 8192 bytes\n"},
		"gzip":                        {gz(t, req), []string{"Content-Encoding: gzip"}, 200, ""},
		"gzip over the limit decoded": {gz(t, padded), []string{"Content-Encoding: gzip"}, 413, "body over 8192 bytes\n"},
		"gzip bomb":                   {gz(t, make([]byte, 64<<20)), []string{"Content-Encoding: gzip"}, 413, "body over 8192 bytes\n"},
		"corrupt gzip":                {[]byte("\x1f\x8bnot really"), []string{"Content-Encoding: gzip"}, 400, "malformed bid request: corrupt gzip body\n"},
		"brotli":                      {req, []string{"Content-Encoding: br"}, 415, "unsupported Content-Encoding: use gzip or identity\n"},
		"text/plain":                  {req, []string{"Content-Type: text/plain"}, 415, "unsupported Content-Type: use application/json\n"},
		"declared huge, never sent":   {nil, []string{"Content-Length: 999999999"}, 413, "body over 8192 bytes\n"},
	} {
		var a response
		if strings.HasPrefix(name, "declared") {
			answers, _ := exchangeRaw(t, p.addr, []byte("POST /bid HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n"), 5*time.Second)
			require.Len(t, answers, 1, name)
			a = answers[0]
		} else {
			a, _ = post(t, p.addr, tc.body, tc.hdr...)
		}
		require.Equal(t, tc.status, a.status, name)
		if tc.text != "" {
			require.Equal(t, tc.text, string(a.body), name)
		}
		checkAnswer(t, a)
	}
	require.EqualValues(t, 1, b.Calls.Load(), "only the valid gzip request reached the bidder")
	p.healthy()
}

func TestExchangeMalformedJSON(t *testing.T) {
	scenario(t, "exchange/malformed-json")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	for name, body := range map[string]string{
		"empty":              "",
		"truncated":          `{"id":"r","imp":[{"id":"1"}`,
		"trailing data":      `{"id":"r","imp":[{"id":"1"}]} {}`,
		"not an object":      `[1,2,3]`,
		"wrong type":         `{"id":"r","imp":[{"id":1}]}`,
		"no id":              `{"imp":[{"id":"1"}]}`,
		"no imp":             `{"id":"r"}`,
		"deep nesting":       `{"id":"r","imp":[{"id":"1"}],"ext":` + deep + `}`,
		"very deep nesting":  `{"id":"r","ext":` + strings.Repeat("[", 200000) + `}`,
		"NUL":                "{\"id\":\"r\",\"imp\":[{\"id\":\"1\"}]\x00}",
		"control in string":  "{\"id\":\"r\x01\",\"imp\":[{\"id\":\"1\"}]}",
		"number overflow":    `{"id":"r","tmax":1e999,"imp":[{"id":"1"}]}`,
		"lone surrogate key": `{"id":"r","\ud800":1,"imp":[{"id":"1"}]`,
	} {
		a, _ := post(t, p.addr, []byte(body))
		require.Equal(t, 400, a.status, name)
		text := string(a.body)
		require.True(t, strings.HasPrefix(text, "malformed bid request: "), "%s: %q", name, text)
		require.Equal(t, 1, strings.Count(text, "\n"), "%s: one line", name)
		require.LessOrEqual(t, len(text), 240, "%s: cut", name)
		for _, c := range []byte(strings.TrimSuffix(text, "\n")) {
			require.True(t, c >= 0x20 && c < 0x7f, "%s: printable ASCII only: %q", name, text)
		}
	}
	require.Zero(t, b.Calls.Load())
	p.healthy()
}

// bidderTmax decodes the tmax the bidder received; it fails when there is
// not exactly one tmax member in any case.
func bidderTmax(t testing.TB, body []byte) int {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	n, v := 0, 0
	for k, raw := range m {
		if strings.EqualFold(k, "tmax") {
			n++
			require.NoError(t, json.Unmarshal(raw, &v))
		}
	}
	require.Equal(t, 1, n, "exactly one tmax reaches the bidder: %s", body)
	require.Equal(t, 1, bytes.Count(bytes.ToLower(body), []byte(`"tmax"`)), "one tmax member: %s", body)
	return v
}

func TestExchangeTmax(t *testing.T) {
	scenario(t, "exchange/tmax")
	var mu sync.Mutex
	var got []byte
	b := newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		got = body
		mu.Unlock()
		w.WriteHeader(204)
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	imp := `"imp":[{"id":"1"}]`
	for _, tc := range []struct {
		body     string
		maxTmax  int // the bidder's tmax is at most this
		shed     bool
		deadline time.Duration
	}{
		{`{"id":"a",` + imp + `}`, 200 - 5 - 7, false, 195 * time.Millisecond},                  // no tmax: defaultTmaxMs
		{`{"id":"a","tmax":0,` + imp + `}`, 200 - 5 - 7, false, 195 * time.Millisecond},         // 0: default
		{`{"id":"a","tmax":-5,` + imp + `}`, 200 - 5 - 7, false, 195 * time.Millisecond},        // negative: default
		{`{"id":"a","tmax":99999999,` + imp + `}`, 1000 - 5 - 7, false, 995 * time.Millisecond}, // capped at maxTmaxMs
		{`{"id":"a","tmax":300,` + imp + `}`, 300 - 5 - 7, false, 295 * time.Millisecond},
		{`{"id":"a","tmax":20,` + imp + `}`, 0, true, 15 * time.Millisecond}, // budget under minBidderMs
		{`{"id":"a","tmax":1,` + imp + `}`, 0, true, 15 * time.Millisecond},
		{`{"id":"a","TMAX":300,"tmax":300,"Tmax":300,` + imp + `}`, 300 - 5 - 7, false, 295 * time.Millisecond},
		{`{"id":"a","t\u006dax":300,` + imp + `}`, 300 - 5 - 7, false, 295 * time.Millisecond},
	} {
		before := b.Calls.Load()
		a, took := post(t, p.addr, []byte(tc.body))
		require.Equal(t, 204, a.status, tc.body)
		require.LessOrEqual(t, took, tc.deadline+deadlineTolerance, tc.body)
		if tc.shed {
			require.Equal(t, before, b.Calls.Load(), "%s: shed without calling the bidder", tc.body)
			continue
		}
		require.Equal(t, before+1, b.Calls.Load(), tc.body)
		mu.Lock()
		tm := bidderTmax(t, got)
		mu.Unlock()
		require.LessOrEqual(t, tm, tc.maxTmax, tc.body)
		require.Greater(t, tm, tc.maxTmax-50, tc.body)
	}
	require.Positive(t, p.metric(`bidguard_shed_total{reason="budget"}`))
	p.healthy()
}

func TestExchangeDuplicateKeys(t *testing.T) {
	scenario(t, "exchange/duplicate-keys")
	var mu sync.Mutex
	var got []byte
	b := newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		got = body
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bidResponse(requestID(body), true))
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	imps := `"imp":[{"id":"1"},{"id":"2"}]`
	for _, body := range []string{
		`{"id":"a","id":"b",` + imps + `}`,
		`{"id":"a","ID":"b",` + imps + `}`,
		`{"id":"a",` + imps + `,"imp":[{"id":"9"}]}`,
		`{"id":"a",` + imps + `,"Imp":[{"id":"9"}]}`,
		`{"id":"a","tmax":300,"tmax":"x",` + imps + `}`,
	} {
		a, _ := post(t, p.addr, []byte(body))
		require.Contains(t, []int{200, 204, 400}, a.status, body)
		checkAnswer(t, a)
		if a.status != 400 {
			mu.Lock()
			bidderTmax(t, got)
			mu.Unlock()
		}
		if a.status == 200 {
			// The answer decodes to one value per key under any parser.
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(a.body, &m))
			keys := map[string]int{}
			dec := json.NewDecoder(bytes.NewReader(a.body))
			_, _ = dec.Token()
			for dec.More() {
				k, _ := dec.Token()
				keys[strings.ToLower(k.(string))]++
				var skip json.RawMessage
				require.NoError(t, dec.Decode(&skip))
			}
			for k, n := range keys {
				require.Equal(t, 1, n, "%s: key %q once in the answer", body, k)
			}
		}
	}
	p.healthy()
}

// TestExchangeSlowloris: connections that drip their headers are answered
// 408 at the read timeout (10 s) and closed; other clients are served on
// time meanwhile.
func TestExchangeSlowloris(t *testing.T) {
	slow(t)
	scenario(t, "exchange/slowloris")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	const n = 50
	results := make(chan int, n)
	start := time.Now()
	for i := range n {
		go func() {
			c, err := net.Dial("tcp", p.addr)
			if err != nil {
				results <- -1
				return
			}
			defer c.Close()
			head := "POST /bid HTTP/1.1\r\nHost: x\r\nX-Drip: "
			if i%2 == 1 { // a kept-alive connection: one good request first
				_, _ = c.Write(httpRequest(bidRequest("k", 500)))
				buf := make([]byte, 4096)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = c.Read(buf)
			}
			for j := 0; j < 30; j++ {
				if _, err := c.Write([]byte{head[min(j, len(head)-1)]}); err != nil {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			results <- 0
		}()
	}
	// Meanwhile, ordinary requests are served on time.
	for range 20 {
		a, took := post(t, p.addr, bidRequest("normal", 200))
		require.Contains(t, []int{200, 204}, a.status, "bids, or a no-bid by the deadline")
		require.Less(t, took, 195*time.Millisecond+deadlineTolerance)
		time.Sleep(200 * time.Millisecond)
	}
	// A request stalled on a kept-alive connection gets 408 at ~10 s (its
	// previous answer's write deadline long past).
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	br := newReader(c)
	_, err = c.Write(httpRequest(bidRequest("before-stall", 500)))
	require.NoError(t, err)
	first, err := readResponse(br)
	require.NoError(t, err)
	require.Equal(t, 200, first.status)
	_, err = c.Write([]byte("POST /bid HTTP/1.1\r\nHost: x\r\nX-Slow: 1"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(15*time.Second)))
	stalled, err := readResponse(br)
	require.NoError(t, err, "answered before the connection is closed")
	require.Equal(t, 408, stalled.status)
	require.Equal(t, "request not received in time\n", string(stalled.body))
	_ = c.Close()
	require.Less(t, time.Since(start), 25*time.Second)
	for range n {
		<-results
	}
	p.healthy()
}

// TestExchangeSlowReader: a client that pipelines requests and never reads
// its answers is cut at the write timeout; others are served meanwhile.
func TestExchangeSlowReader(t *testing.T) {
	slow(t)
	scenario(t, "exchange/slow-reader")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	c, err := d.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer c.Close()
	req := httpRequest(bidRequest("slow-reader", 500))
	go func() {
		for range 2000 {
			if _, err := c.Write(req); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	for time.Since(start) < 12*time.Second {
		a, took := post(t, p.addr, bidRequest("normal", 200))
		require.Equal(t, 200, a.status)
		require.Less(t, took, 195*time.Millisecond+deadlineTolerance)
		time.Sleep(500 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return p.metric("bidguard_connections_open") == 0 }, 20*time.Second, 100*time.Millisecond,
		"the slow reader's connection is closed")
	p.healthy()
}

// TestExchangeConnectionFlood: with RLIMIT_NOFILE 256 the connection cap is
// (256−64)/2 = 96; a flood of 400 idle connections is refused beyond it
// (closed at once, counted), the process keeps serving once the idle ones
// time out, and even with limits.maxConns above what descriptors allow,
// EMFILE on accept is retried instead of killing the process.
func TestExchangeConnectionFlood(t *testing.T) {
	scenario(t, "exchange/connection-flood")
	b := goodBidder(t, 0)
	for _, tc := range []struct {
		name, extra string
		emfile      bool
	}{
		{"derived cap", "limits: {idleTimeoutMs: 1000}\n", false},
		{"cap above the descriptor limit", "limits: {idleTimeoutMs: 1000, maxConns: 5000}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			p := startProc(t, procOpts{upstream: b.URL + "/bid", extra: tc.extra, nofile: 256})
			t.Logf("started at %v", time.Since(t0))
			var conns []net.Conn
			for range 400 {
				c, err := net.DialTimeout("tcp", p.addr, time.Second)
				if err != nil {
					continue
				}
				conns = append(conns, c)
			}
			time.Sleep(300 * time.Millisecond)
			require.False(t, p.exited(), "alive under the flood; stderr: %s", p.stderr.String())
			t.Logf("%d connections opened", len(conns))
			for _, c := range conns {
				_ = c.Close()
			}
			m := p.metrics()
			if tc.emfile {
				require.Positive(t, metricIn(t, m, "bidguard_accept_errors_total"), "EMFILE met and retried")
			} else {
				require.Positive(t, metricIn(t, m, "bidguard_connections_refused_total"))
			}
			t.Logf("flood closed at %v", time.Since(t0))
			// Served again.
			require.Eventually(t, func() bool {
				c, err := net.Dial("tcp", p.addr)
				if err != nil {
					return false
				}
				defer c.Close()
				_, _ = c.Write(httpRequest(bidRequest("after", 500), "Connection: close"))
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				r, err := readResponse(newReader(c))
				return err == nil && r.status == 200
			}, 15*time.Second, 100*time.Millisecond, "served after the flood")
			t.Logf("served at %v", time.Since(t0))
			p.healthy()
			t.Logf("healthy at %v", time.Since(t0))
		})
	}
}
