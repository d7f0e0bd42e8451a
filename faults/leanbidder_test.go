package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// leanBidder is a bidder cheap enough to share a core with the exchange's
// client in the overload scenarios: raw HTTP/1.1 over keep-alive
// connections, no recording, one pre-built answer whose request id and
// creative ids are written in place. It answers every request with the
// bids of gates/testdata/typical-response.json (banner, banner, VAST: all
// pass the default policy) plus one bid for an imp the request lacks (id
// "bad-1": impidMatch rejects it). Each answer's creatives differ from the
// last (a counter in every adm's tracking URLs), as real ones carrying
// per-impression ids do, so the markup verdict cache does not answer for
// the readers.
type leanBidder struct {
	addr    string
	latency time.Duration
	quit    chan struct{} // closed when the test ends
	wg      sync.WaitGroup
	// answer is the response body with idMark where the request id goes
	// and crMark (counterLen bytes) in each adm.
	answer []byte
}

const (
	idMark     = "@@REQUEST-ID@@"
	crMark     = "00000000"
	counterLen = len(crMark)
)

// typicalRequest is gates/testdata/typical-request.json with id and tmax
// replaced: the request the default policy's numbers are measured with.
func typicalRequest(t testing.TB, id string, tmaxMs int) []byte {
	t.Helper()
	raw, err := os.ReadFile("../gates/testdata/typical-request.json")
	require.NoError(t, err)
	var req map[string]any
	require.NoError(t, json.Unmarshal(raw, &req))
	req["id"], req["tmax"] = id, tmaxMs
	b, err := json.Marshal(req)
	require.NoError(t, err)
	return b
}

// leanAnswer builds the answer template from the typical response.
func leanAnswer(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("../gates/testdata/typical-response.json")
	require.NoError(t, err)
	var resp struct {
		ID      string           `json:"id"`
		BidID   string           `json:"bidid"`
		Cur     string           `json:"cur"`
		SeatBid []map[string]any `json:"seatbid"`
	}
	require.NoError(t, json.Unmarshal(raw, &resp))
	resp.ID = idMark
	for _, sb := range resp.SeatBid {
		for _, b := range sb["bid"].([]any) {
			bid := b.(map[string]any)
			adm := bid["adm"].(string)
			// Every tracking parameter "=bN" becomes "=bN-<counter>".
			id := bid["id"].(string)
			bid["adm"] = string(bytes.ReplaceAll([]byte(adm), []byte("="+id), []byte("="+id+"-"+crMark)))
			require.Contains(t, bid["adm"], crMark, "bid %s's adm carries no tracking id", id)
		}
	}
	bad := map[string]any{"id": "bad-1", "impid": "999", "price": 2.5, "adomain": []string{"evil.example"}, "crid": "c9", "w": 300, "h": 250, "mtype": 1,
		"adm": `<div><img src="https://cdn.evil.example/x.png" width="300" height="250"></div>`}
	resp.SeatBid[0]["bid"] = append(resp.SeatBid[0]["bid"].([]any), bad)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(resp))
	return bytes.TrimSpace(b.Bytes())
}

// newLeanBidder listens on loopback and answers after latency. It stops
// when the test ends.
func newLeanBidder(t testing.TB, latency time.Duration) *leanBidder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &leanBidder{addr: ln.Addr().String(), latency: latency, quit: make(chan struct{}), answer: leanAnswer(t)}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		var conns sync.WaitGroup
		defer conns.Wait()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				b.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		close(b.quit)
		_ = ln.Close()
		b.wg.Wait()
	})
	return b
}

// serve answers the requests of one connection until bidguard closes it or
// the test ends.
func (b *leanBidder) serve(c net.Conn) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-stop:
		case <-b.quit:
			_ = c.Close()
		}
	}()
	br := bufio.NewReaderSize(c, 16<<10)
	var body, out []byte
	var n uint64
	for {
		var err error
		body, err = readLeanRequest(br, body)
		if err != nil {
			return
		}
		n++
		out = b.appendAnswer(out[:0], requestID(body), n)
		if b.latency > 0 {
			time.Sleep(b.latency)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// appendAnswer appends the HTTP answer to request id, the creatives
// numbered n.
func (b *leanBidder) appendAnswer(out []byte, id string, n uint64) []byte {
	var num [counterLen]byte
	for i := counterLen - 1; i >= 0; i-- {
		num[i] = byte('0' + n%10)
		n /= 10
	}
	body := bytes.Replace(b.answer, []byte(idMark), []byte(id), 1)
	body = bytes.ReplaceAll(body, []byte(crMark), num[:])
	out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	return append(out, body...)
}

// readLeanRequest reads one Content-Length framed request and returns its
// body in buf.
func readLeanRequest(br *bufio.Reader, buf []byte) ([]byte, error) {
	n := -1
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if first {
			if !bytes.HasPrefix(line, []byte("POST ")) {
				return nil, fmt.Errorf("lean bidder: request line %q", line)
			}
			continue
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			v, err := strconv.Atoi(string(bytes.TrimSpace(line[15:])))
			if err != nil {
				return nil, err
			}
			n = v
		}
	}
	if n < 0 {
		return nil, errors.New("lean bidder: no Content-Length")
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(br, buf)
	return buf, err
}
