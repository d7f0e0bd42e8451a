package faults

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// bidResponse answers request id with good bids for imps 1-3 and one bad
// bid (impid 999: impidMatch rejects it) unless only good ones are asked.
func bidResponse(id string, bad bool) []byte {
	badBid := ""
	if bad {
		badBid = `,{"id":"bad-1","impid":"999","price":2.5,"adomain":["evil.example"],"crid":"c9","adm":"<b>x</b>"}`
	}
	return []byte(fmt.Sprintf(`{"id":%q,"cur":"USD","seatbid":[{"seat":"s1","bid":[`+
		`{"id":"b1","impid":"1","price":1.5,"adomain":["brand.example"],"crid":"c1","w":300,"h":250,"adm":"<b>ad one</b>"},`+
		`{"id":"b2","impid":"2","price":0.9,"adomain":["brand.example"],"crid":"c2","w":728,"h":90,"adm":"<b>ad two</b>"}%s]}]}`, id, badBid))
}

// requestID pulls the "id" of a bid request body (the fake bidders echo it).
func requestID(body []byte) string {
	const key = `"id":"`
	for i := 0; i+len(key) < len(body); i++ {
		if string(body[i:i+len(key)]) == key {
			for j := i + len(key); j < len(body); j++ {
				if body[j] == '"' {
					return string(body[i+len(key) : j])
				}
			}
		}
	}
	return ""
}

// newHTTPBidder is a testbidder.HTTP whose handler gets the request body.
func newHTTPBidder(t testing.TB, h func(w http.ResponseWriter, r *http.Request, body []byte), opts ...testbidder.Option) *testbidder.Bidder {
	t.Helper()
	return testbidder.HTTP(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h(w, r, body)
	}, opts...)
}

// goodBidder answers after latency with two good bids and one bad one.
func goodBidder(t testing.TB, latency time.Duration) *testbidder.Bidder {
	return goodBidderIdle(t, latency, 0)
}

// goodBidderIdle is goodBidder closing connections idle for longer than idle.
func goodBidderIdle(t testing.TB, latency, idle time.Duration) *testbidder.Bidder {
	return newHTTPBidder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bidResponse(requestID(body), true))
	}, testbidder.Latency(latency), testbidder.IdleTimeout(idle))
}

// readBidRequest reads one HTTP request (Content-Length framed, as bidguard
// sends) from br and returns its body.
func readBidRequest(br interface {
	ReadString(byte) (string, error)
	Read([]byte) (int, error)
}) ([]byte, error) {
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if line == "\r\n" {
			break
		}
		var v int
		if _, err := fmt.Sscanf(line, "Content-Length: %d", &v); err == nil {
			n = v
		}
	}
	body := make([]byte, n)
	_, err := io.ReadFull(br, body)
	return body, err
}
