package rtb

import (
	"bufio"
	"net"
	"syscall"
	"time"
)

// Buffer sizes of an upstream connection. The read buffer also bounds the
// bidder's response headers: a header block that does not fit is
// kind="too_large".
const (
	connReadBuffer  = 8 << 10
	connWriteBuffer = 4 << 10
)

// conn is one pooled keep-alive connection to a bidder, with its own
// buffers. It is used by one call at a time: the pool hands it out and takes
// it back.
type conn struct {
	nc  net.Conn // requests are written to and answers read from nc (TLS over raw for https)
	raw net.Conn // the transport: closed by close, probed before reuse
	br  *bufio.Reader
	bw  *bufio.Writer

	// rc probes raw without blocking; nil when raw is not a syscall.Conn
	// (in-memory pipes), which are probed by a read that cannot wait.
	rc       syscall.RawConn
	probeFn  func(fd uintptr) bool // built once, so a probe allocates nothing
	probeGot probeResult

	idleAt time.Duration // monotonic instant it went idle (monotonic())
}

// probeResult is what a connection looks like while idle.
type probeResult uint8

const (
	probeQuiet  probeResult = iota // nothing to read: usable
	probeClosed                    // EOF or an error: the bidder closed it
	probeBytes                     // unsolicited bytes: out of step
)

func newConn(nc, raw net.Conn) *conn {
	c := &conn{
		nc:  nc,
		raw: raw,
		br:  bufio.NewReaderSize(nc, connReadBuffer),
		bw:  bufio.NewWriterSize(nc, connWriteBuffer),
	}
	if sc, ok := raw.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
			c.probeFn = func(fd uintptr) bool {
				c.probeGot = peekFD(fd)
				return true // never wait for readiness
			}
		}
	}
	return c
}

// probe sets c's deadline for a call and reports, without blocking,
// whether the idle connection can carry the request: no byte buffered, none
// readable on the socket, no EOF. Over TLS, plaintext the TLS layer holds
// is looked for too, by a read that cannot wait, and bytes on the socket
// that are the bidder's close_notify count as a close.
func (c *conn) probe(deadline time.Time) probeResult {
	if c.br.Buffered() > 0 {
		return probeBytes
	}
	// The deadline first: a raw read refuses to run past an expired one.
	if c.nc.SetDeadline(deadline) != nil {
		return probeClosed
	}
	r := probeQuiet
	if c.rc != nil {
		if err := c.rc.Read(c.probeFn); err != nil {
			return probeClosed
		}
		r = c.probeGot
	}
	switch {
	case r == probeQuiet && (c.rc == nil || c.nc != c.raw):
		r = c.probeByRead()
	case r == probeBytes && c.nc != c.raw:
		// Over TLS the bytes may be the bidder's close_notify, a close
		// rather than a stray answer: the TLS layer tells (anything else,
		// a partial record included, stays stray).
		if c.probeTLSBytes() {
			r = probeClosed
		}
	default:
		return r
	}
	if c.nc.SetDeadline(deadline) != nil {
		return probeClosed
	}
	return r
}

// probeByRead reads with a deadline in the past: it sees bytes already
// delivered to a connection without a descriptor (in-memory pipes) or held
// by the TLS layer, and EOF when the transport reports it before the
// timeout. The caller sets the deadline again.
func (c *conn) probeByRead() probeResult {
	if err := c.nc.SetReadDeadline(time.Unix(1, 0)); err != nil {
		return probeClosed
	}
	_, err := c.br.Peek(1)
	switch {
	case err == nil:
		return probeBytes
	case isTimeout(err):
		return probeQuiet
	default:
		return probeClosed
	}
}

// tlsCloseWait bounds the read that tells a close_notify from stray bytes
// over TLS: the bytes are on the socket already, so it waits only for a
// record split across packets.
const tlsCloseWait = time.Millisecond

// probeTLSBytes reports whether the bytes on a TLS connection's socket end
// it (a close_notify alert or another error) rather than carry data. A read
// past its deadline never looks at the socket, hence a short one ahead.
// The caller sets the deadline again.
func (c *conn) probeTLSBytes() bool {
	if c.nc.SetReadDeadline(time.Now().Add(tlsCloseWait)) != nil {
		return true
	}
	_, err := c.br.Peek(1)
	return err != nil && !isTimeout(err)
}

// write sends one request: head, then body.
func (c *conn) write(head, body []byte) error {
	if _, err := c.bw.Write(head); err != nil {
		return err
	}
	if _, err := c.bw.Write(body); err != nil {
		return err
	}
	return c.bw.Flush()
}

// close closes the transport. For TLS it skips close_notify, which could
// block on a stuck peer.
func (c *conn) close() { _ = c.raw.Close() } // nothing to do about a failed close

// epoch anchors monotonic().
var epoch = time.Now()

// monotonic is a monotonic clock reading.
func monotonic() time.Duration { return time.Since(epoch) }
