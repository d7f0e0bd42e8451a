package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// maxAnswerBytes bounds an answer body read by the attack.
const maxAnswerBytes = 4 << 20

// client is one keep-alive connection to the target, used by one goroutine
// at a time. A request that fails closes the connection; the next one dials
// again (the dial counts in its latency). Nothing is retried.
type client struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	resp fasthttp.Response
}

// do writes raw (a whole HTTP/1.1 request) and reads the answer, all before
// deadline. It returns the status and body (valid until the next do), or
// status 0 and the kind of transport error.
func (c *client) do(raw []byte, deadline time.Time) (status int, body []byte, errKind string) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, time.Until(deadline))
		if err != nil {
			if isTimeout(err) {
				return 0, nil, errTimeout
			}
			return 0, nil, errConnect
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		c.close()
		return 0, nil, errReset
	}
	if _, err := c.conn.Write(raw); err != nil {
		c.close()
		return 0, nil, classify(err)
	}
	if err := c.resp.ReadLimitBody(c.br, maxAnswerBytes); err != nil {
		c.close()
		return 0, nil, classify(err)
	}
	if c.resp.ConnectionClose() {
		c.close() // the body stays valid: it lives in resp, not in the connection
	}
	return c.resp.StatusCode(), c.resp.Body(), ""
}

func (c *client) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// isTimeout reports a deadline error: os.ErrDeadlineExceeded, a net.Error
// that timed out, or fasthttp.ErrTimeout (which has Timeout but is no
// net.Error: an answer cut off by the deadline is a timeout, not bad HTTP).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}

// classify maps a failed exchange to its errors kind.
func classify(err error) string {
	switch {
	case isTimeout(err):
		return errTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), errors.Is(err, fasthttp.ErrConnectionClosed):
		return errReset
	}
	return errBadHTTP
}
