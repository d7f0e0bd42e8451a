package faults

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// bidderTmaxMs is the tmax of the bidder-side scenarios: D = 195 ms.
const bidderTmaxMs = 200

// byDeadline posts a bid request and checks the answer arrived by D.
func byDeadline(t *testing.T, p *proc, id string) response {
	t.Helper()
	a, took := post(t, p.addr, bidRequest(id, bidderTmaxMs))
	require.LessOrEqual(t, took, time.Duration(bidderTmaxMs)*time.Millisecond-returnMargin+deadlineTolerance, "answered by the deadline")
	checkAnswer(t, a)
	return a
}

// answerRaw writes a raw HTTP response for one request read from br.
func answerRaw(c net.Conn, br *bufio.Reader, resp func(id string) string) bool {
	body, err := readBidRequest(br)
	if err != nil {
		return false
	}
	_, err = c.Write([]byte(resp(requestID(body))))
	return err == nil
}

func okResponse(body string, extra ...string) string {
	return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + strings.Join(extra, "") +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
}

func TestBidderSlowDrip(t *testing.T) {
	scenario(t, "bidder/slow-drip")
	b := testbidder.Raw(t, func(c *testbidder.Conn) {
		br := bufio.NewReader(c)
		body, err := readBidRequest(br)
		if err != nil {
			return
		}
		resp := okResponse(string(bidResponse(requestID(body), true)))
		for i := range len(resp) {
			if _, err := c.Write([]byte{resp[i]}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	for i := range 3 {
		a := byDeadline(t, p, fmt.Sprint("drip", i))
		require.Equal(t, 204, a.status)
	}
	require.EqualValues(t, 3, p.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="timeout"}`))
	p.healthy()
}

func TestBidderWrongLengths(t *testing.T) {
	scenario(t, "bidder/wrong-length")
	for _, tc := range []struct {
		name   string
		script func(c net.Conn, br *bufio.Reader)
		status int
	}{
		{"longer than sent, then stall", func(c net.Conn, br *bufio.Reader) {
			answerRaw(c, br, func(id string) string {
				body := string(bidResponse(id, true))
				return "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(body)+100) + "\r\n\r\n" + body
			})
			time.Sleep(2 * time.Second)
		}, 204},
		{"longer than sent, then close", func(c net.Conn, br *bufio.Reader) {
			answerRaw(c, br, func(id string) string {
				body := string(bidResponse(id, true))
				return "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(body)+100) + "\r\n\r\n" + body
			})
		}, 204},
		{"no length, close-delimited", func(c net.Conn, br *bufio.Reader) {
			answerRaw(c, br, func(id string) string {
				return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + string(bidResponse(id, true))
			})
		}, 200},
		{"shorter than sent: judged on its length", func(c net.Conn, br *bufio.Reader) {
			answerRaw(c, br, func(id string) string {
				body := string(bidResponse(id, true))
				return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" + body
			})
		}, 204},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testbidder.Raw(t, func(c *testbidder.Conn) { tc.script(c, bufio.NewReader(c)) })
			p := startProc(t, procOpts{upstream: b.URL + "/bid"})
			a := byDeadline(t, p, "len")
			require.Equal(t, tc.status, a.status)
			p.healthy()
		})
	}
}

// TestBidderExtraBytes: a bidder that writes a stray second response after
// a real one must not hand that response to the next auction on the same
// pooled connection.
func TestBidderExtraBytes(t *testing.T) {
	scenario(t, "bidder/extra-bytes")
	var n atomic.Int64
	b := testbidder.Raw(t, func(c *testbidder.Conn) {
		br := bufio.NewReader(c)
		for answerRaw(c, br, func(id string) string {
			good := okResponse(string(bidResponse(id, false)))
			if n.Add(1) == 1 {
				stray := `{"id":"stale","seatbid":[{"seat":"s9","bid":[{"id":"stray","impid":"1","price":9,"adomain":["x.example"],"crid":"x","adm":"x"}]}]}`
				return good + okResponse(stray)
			}
			return good
		}) {
		}
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	for i := range 5 {
		a := byDeadline(t, p, fmt.Sprint("x", i))
		require.NotContains(t, string(a.body), "stray", "request %d got the stray response", i)
	}
	p.healthy()
}

func TestBidderHugeHeaders(t *testing.T) {
	scenario(t, "bidder/huge-headers")
	b := testbidder.Raw(t, func(c *testbidder.Conn) {
		br := bufio.NewReader(c)
		answerRaw(c, br, func(id string) string {
			return okResponse(string(bidResponse(id, true)), "X-Huge: "+strings.Repeat("h", 1<<20)+"\r\n")
		})
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	a := byDeadline(t, p, "huge")
	require.Equal(t, 204, a.status)
	p.healthy()
}

func TestBidderHopByHopHeaders(t *testing.T) {
	scenario(t, "bidder/hop-by-hop")
	b := newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Connection", "keep-alive, X-Secret")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Connection", "keep-alive")
		h.Set("Upgrade", "h2c")
		h.Set("Trailer", "X-T")
		h.Set("Set-Cookie", "uid=42; Domain=example.com")
		h.Set("X-Secret", "s3cret")
		h.Set("Server", "bidder/1.0")
		h.Set("X-Bidguard-Rejected", "99")
		_, _ = w.Write(bidResponse(requestID(body), true)) // chunked: no Content-Length
		w.(http.Flusher).Flush()
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	a := byDeadline(t, p, "hop")
	require.Equal(t, 200, a.status)
	require.Equal(t, "1", a.header["x-bidguard-rejected"], "the bad bid was removed")
	for k := range a.header {
		switch k {
		case "content-type", "content-length", "date", "x-bidguard-config", "x-bidguard-rejected":
		case "connection":
			require.Equal(t, "close", a.header[k], "the exchange's own Connection: close, not the bidder's")
		default:
			t.Errorf("header %s reached the exchange", k)
		}
	}
	p.healthy()
}

func TestBidderTooManyBids(t *testing.T) {
	scenario(t, "bidder/too-many-bids")
	b := newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var sb strings.Builder
		fmt.Fprintf(&sb, `{"id":%q,"seatbid":[{"seat":"s1","bid":[`, requestID(body))
		for i := range 11 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"b%d","impid":"1","price":1,"adomain":["a.example"],"crid":"c","adm":"x"}`, i)
		}
		sb.WriteString(`]}]}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(sb.String()))
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid", extra: "limits: {maxBids: 10, idleTimeoutMs: 1000}\n"})
	a := byDeadline(t, p, "many")
	require.Equal(t, 204, a.status)
	require.Equal(t, "11", a.header["x-bidguard-rejected"])
	p.healthy()
}

func TestBidderInvalidUTF8(t *testing.T) {
	scenario(t, "bidder/invalid-utf8")
	b := newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(fmt.Sprintf(`{"id":%q,"seatbid":[{"seat":"s1","bid":[`+
			`{"id":"b1","impid":"1","price":1,"adomain":["a.example"],"crid":"c","adm":"<b>caf\xe9 \xff\xfe</b>"},`+
			`{"id":"b2\xc3","impid":"2","price":1,"adomain":["a.example"],"crid":"c","adm":"ok"}]}]}`, requestID(body))))
	})
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	a := byDeadline(t, p, "utf8")
	require.Contains(t, []int{200, 204}, a.status)
	require.True(t, utf8.Valid(a.body), "the answer is valid UTF-8: %q", a.body)
	p.healthy()
}

// TestBidderIdleClose: a bidder closing idle connections after 1 s loses
// no auction after quiet spells.
func TestBidderIdleClose(t *testing.T) {
	scenario(t, "bidder/idle-close")
	b := goodBidderIdle(t, 0, time.Second)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	for i := range 6 {
		a := byDeadline(t, p, fmt.Sprint("idle", i))
		require.Equal(t, 200, a.status, "auction %d", i)
		time.Sleep(1100 * time.Millisecond)
	}
	p.healthy()
}

// TestBidderRestart: a bidder restarted between requests loses no auction.
func TestBidderRestart(t *testing.T) {
	scenario(t, "bidder/restart")
	b := goodBidder(t, 0)
	addr := b.Addr
	p := startProc(t, procOpts{upstream: "http://" + addr + "/bid"})
	for i := range 4 {
		a := byDeadline(t, p, fmt.Sprint("restart", i))
		require.Equal(t, 200, a.status, "auction %d", i)
		b.CloseConns() // the bidder restarts: every connection gone
	}
	p.healthy()
}
