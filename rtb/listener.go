package rtb

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The exchange listener: an accept loop that survives descriptor
// exhaustion, a connection cap, and connections that check the framing of
// every request (framer) and know when each request's first bytes arrived
// (connArrival).

// Accept back-off on temporary errors (EMFILE, ENFILE, ECONNABORTED, ...):
// doubling from acceptBackoffMin to acceptBackoffMax, reset by a success.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// maxArrivalAge bounds the age of a kernel receive timestamp: an older one
// (a stepped wall clock) is not trusted and the read's own time is used.
const maxArrivalAge = time.Minute

// DefaultMaxConns is limits.maxConns when the config leaves it 0: half of
// the descriptors RLIMIT_NOFILE leaves after a reserve of 64 (files, the
// admin listener, the audit log), so that every exchange connection can
// have its bidder connection beside it. nofile is the soft limit, which Go
// raises to the hard limit at startup.
func DefaultMaxConns(nofile uint64) int {
	const reserve, floor = 64, 16
	if nofile <= reserve+2*floor {
		return floor
	}
	n := (nofile - reserve) / 2
	if n > 1<<20 {
		n = 1 << 20
	}
	return int(n)
}

// nofileLimit returns the soft RLIMIT_NOFILE (0 when unknown).
func nofileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}

// listener wraps a listener of the Server. Accept never returns a
// temporary error (fasthttp's Serve would stop on it): it backs off and
// retries, and returns only once the listener is closed. On the exchange
// listener, connections over the cap are closed at once and counted, and
// every connection is a *exchangeConn.
type listener struct {
	net.Listener
	s         *Server
	exchange  bool
	done      chan struct{}
	closeOnce sync.Once
}

func (s *Server) newListener(ln net.Listener, exchange bool) *listener {
	if exchange {
		enableTimestamps(ln)
	}
	return &listener{Listener: ln, s: s, exchange: exchange, done: make(chan struct{})}
}

// PrepareListener readies the exchange listener before anything is served
// on it: it asks for receive timestamps and waits (at most wait) until the
// kernel stamps packets, which it turns on lazily, so that the deadline of
// the very first requests runs from their arrival too. It probes with a
// loopback connection of its own; without TCP it does nothing.
func PrepareListener(ln net.Listener, wait time.Duration) {
	if _, ok := ln.(*net.TCPListener); !ok {
		return
	}
	enableTimestamps(ln)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	defer probe.Close()
	enableTimestamps(probe)
	cl, err := net.Dial("tcp", probe.Addr().String())
	if err != nil {
		return
	}
	defer cl.Close()
	nc, err := probe.Accept()
	if err != nil {
		return
	}
	c := (&Server{}).newConn(nc)
	defer func() { _ = c.Conn.Close() }()
	if c.rc == nil {
		return
	}
	buf := make([]byte, 1)
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if _, err := cl.Write(buf); err != nil {
			return
		}
		if _, _, err := c.read(buf); err != nil || c.stamped {
			return
		}
	}
}

// enableTimestamps sets SO_TIMESTAMPNS on a TCP listener: the kernel turns
// receive timestamping on lazily (a deferred static key) and off again when
// no socket asks for it, so the listener asks for the server's lifetime and
// the first connections are stamped too. Accepted sockets inherit the flag.
func enableTimestamps(ln net.Listener) {
	if tl, ok := ln.(*net.TCPListener); ok {
		if rc, err := tl.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
			})
		}
	}
}

func (l *listener) Accept() (net.Conn, error) {
	backoff := time.Duration(0)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case <-l.done:
				return nil, net.ErrClosed
			default:
			}
			if !temporaryAcceptError(err) {
				return nil, err
			}
			l.s.meters.acceptErrors.Inc()
			l.s.logLimited("accept failed; backing off", "listener", l.Addr().String(), "error", err)
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			t := time.NewTimer(backoff)
			select {
			case <-l.done:
				t.Stop()
				return nil, net.ErrClosed
			case <-t.C:
			}
			continue
		}
		backoff = 0
		if !l.exchange {
			return c, nil
		}
		if n := l.s.open.Load(); n >= int64(l.s.maxConns()) {
			l.s.meters.connsRefused.Inc()
			_ = c.Close() // refused: nothing was read, nothing to answer
			continue
		}
		l.s.open.Add(1)
		return l.s.newConn(c), nil
	}
}

// Close closes the listener once; later calls return nil.
func (l *listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// temporaryAcceptError reports whether accept may succeed later: descriptor
// or memory exhaustion, or a connection that went away before accept.
func temporaryAcceptError(err error) bool {
	for _, e := range [...]syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO, syscall.EPERM, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// exchangeConn is one exchange connection. Reads go through the framer; on TCP they
// use recvmsg with SO_TIMESTAMPNS, so the arrival of a request is the
// kernel's receive time of its first bytes, not the time the goroutine got
// to read them (which a busy CPU delays). Read is called by the connection's
// goroutine only (fasthttp serves a connection on one goroutine), as is
// arrival; Close may come from any goroutine.
type exchangeConn struct {
	net.Conn
	s      *Server
	closed atomic.Bool
	f      framer

	// recvmsg state; rc is nil when kernel timestamps are unavailable.
	rc      syscall.RawConn
	readFn  func(fd uintptr) bool // c.recv, bound once
	msg     syscall.Msghdr
	iov     syscall.Iovec
	oob     [64]byte
	buf     []byte
	n       int
	errno   syscall.Errno
	stamped bool // the last read carried a kernel timestamp
	// careful: this connection pipelines (a read held more than one
	// request, or filled the buffer), so reads take their first byte alone
	// to be stamped with the oldest waiting segment; until then a read is
	// one recvmsg.
	careful bool
	queue   queueGate

	// The deadlines last set on the socket (connDeadlines).
	readDL, writeDL time.Time

	// runs maps request numbers to arrival times: run i says that requests
	// from runs[i].first on began in a read at runs[i].at. A ring, oldest at
	// head; count runs are live.
	runs        [16]arrivalRun
	head, count int

	// addrOf is the remote address whose IP addrText holds as appendIP
	// writes it (in addrBuf, long enough for any IPv6 address).
	addrOf   *net.TCPAddr
	addrText []byte
	addrBuf  [len("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")]byte
}

type arrivalRun struct {
	first uint64
	at    time.Time
}

func (s *Server) newConn(nc net.Conn) *exchangeConn {
	c := &exchangeConn{Conn: nc, s: s}
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
			}); err == nil && serr == nil {
				c.rc = rc
				c.readFn = c.recv
			}
		}
	}
	return c
}

// SetReadDeadline and SetWriteDeadline apply t unless it would move the
// deadline already set later by less than the server's deadlineSlack: fasthttp
// sets three deadlines a request (idle, read, write), each a timer update
// in the runtime, and a keep-alive connection busy with requests would
// otherwise move its timers every few milliseconds. A deadline so skipped
// expires at most deadlineSlack before the one asked for; an earlier
// deadline, or none, is always applied. Called by the connection's
// goroutine only, as fasthttp does.
func (c *exchangeConn) SetReadDeadline(t time.Time) error {
	if skipDeadline(c.readDL, t, c.s.deadlineSlack) {
		return nil
	}
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	c.readDL = t
	return nil
}

func (c *exchangeConn) SetWriteDeadline(t time.Time) error {
	if skipDeadline(c.writeDL, t, c.s.deadlineSlack) {
		return nil
	}
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	c.writeDL = t
	return nil
}

func (c *exchangeConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetDeadline(t); err != nil {
		return err
	}
	c.readDL, c.writeDL = t, t
	return nil
}

// skipDeadline reports whether a deadline t may be left as set, at set:
// both are set and t is later by less than slack.
func skipDeadline(set, t time.Time, slack time.Duration) bool {
	return !set.IsZero() && !t.IsZero() && !t.Before(set) && t.Sub(set) < slack
}

func (c *exchangeConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.s.open.Add(-1)
	}
	return c.Conn.Close()
}

// Read hands on the bytes the framer accepts; after a framing error it
// returns that error.
func (c *exchangeConn) Read(p []byte) (int, error) {
	if c.f.err != nil {
		return 0, c.f.err
	}
	n, at, err := c.read(p)
	if n > 0 {
		ok, starts, ferr := c.f.scan(p[:n])
		if starts > 1 || n == len(p) {
			c.careful = true
		}
		if starts > 0 {
			c.addRun(c.f.requests-uint64(starts)+1, at)
		}
		if ferr != nil {
			if ok == 0 {
				return 0, ferr
			}
			return ok, nil
		}
	}
	return n, err
}

func (c *exchangeConn) read(p []byte) (int, time.Time, error) {
	if c.rc == nil || len(p) == 0 {
		n, err := c.Conn.Read(p)
		return n, time.Now(), err
	}
	c.buf = p
	err := c.rc.Read(c.readFn)
	c.buf = nil
	if err != nil {
		return 0, time.Time{}, err // deadline exceeded, closed
	}
	if c.errno != 0 {
		return 0, time.Time{}, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: c.errno}
	}
	if c.n == 0 {
		return 0, time.Time{}, io.EOF
	}
	return c.n, c.stamp(), nil
}

// recv reads without blocking; false asks the poller to wait for data. The
// kernel stamps a recvmsg with the receive time of the last segment it
// consumed. A connection that sends one request at a time (the common case)
// is read in one recvmsg, which stamps the request with its own arrival. On
// a pipelining connection (careful) the first byte comes alone, so the
// stamp is the arrival of the oldest unread byte, a bound for every request
// starting in this read (requests pipelined behind it are stamped no later
// than they arrived: their queue time is never underestimated); the rest
// follows by read(2) without waiting.
func (c *exchangeConn) recv(fd uintptr) bool {
	c.iov.Base = &c.buf[0]
	c.iov.SetLen(len(c.buf))
	if c.careful {
		c.iov.SetLen(1)
	}
	c.msg.Iov = &c.iov
	c.msg.Iovlen = 1
	c.msg.Control = &c.oob[0]
	c.msg.SetControllen(len(c.oob))
	for {
		n, _, e := syscall.Syscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.n, c.errno = int(n), e
		break
	}
	if !c.careful || c.n != 1 || len(c.buf) == 1 {
		return true
	}
	for {
		n, err := syscall.Read(int(fd), c.buf[1:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if n > 0 { // EAGAIN, EOF or an error: the next read sees it
			c.n += n
		}
		return true
	}
}

// stamp returns the kernel's receive time of the last recvmsg, on the
// monotonic clock, or now when there is none.
func (c *exchangeConn) stamp() time.Time {
	now := time.Now()
	c.stamped = false
	const hdr = int(unsafe.Sizeof(syscall.Cmsghdr{}))
	if int(c.msg.Controllen) < hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
		return now
	}
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&c.oob[0]))
	if h.Level != syscall.SOL_SOCKET || h.Type != syscall.SCM_TIMESTAMPNS {
		return now
	}
	ts := (*syscall.Timespec)(unsafe.Pointer(&c.oob[hdr]))
	c.stamped = true
	age := now.Sub(time.Unix(ts.Sec, ts.Nsec)) // wall clocks: the kernel's has no monotonic reading
	if age <= 0 || age > maxArrivalAge {
		return now
	}
	return now.Add(-age)
}

// addRun records that requests from first on began in a read at at. When
// the ring is full the newest run is dropped: the requests it covered take
// the earlier time of the run before them, which can only shed more.
func (c *exchangeConn) addRun(first uint64, at time.Time) {
	if c.count == len(c.runs) {
		return
	}
	c.runs[(c.head+c.count)%len(c.runs)] = arrivalRun{first: first, at: at}
	c.count++
}

// arrival returns when request k (1-based, fasthttp's ConnRequestNum) began
// to arrive, and forgets the runs of earlier requests.
func (c *exchangeConn) arrival(k uint64) (time.Time, bool) {
	for c.count > 1 && c.runs[(c.head+1)%len(c.runs)].first <= k {
		c.head = (c.head + 1) % len(c.runs)
		c.count--
	}
	if c.count == 0 || c.runs[c.head].first > k {
		return time.Time{}, false
	}
	return c.runs[c.head].at, true
}

// clientAddr is the text of a's IP as appendIP writes it, made when a is
// not the address the last call was given (the connection's own remote
// address does not change). It belongs to the connection's serving
// goroutine, and the text to c until the next call.
func (c *exchangeConn) clientAddr(a *net.TCPAddr) []byte {
	if a != c.addrOf {
		c.addrText = appendIP(c.addrBuf[:0], a.IP)
		c.addrOf = a
	}
	return c.addrText
}

// connFramingError returns the framing error that stopped nc's reads, if
// any: fasthttp does not always wrap a read error so that errors.As finds it.
func connFramingError(nc net.Conn) *framingError {
	if c, ok := nc.(*exchangeConn); ok {
		return c.f.err
	}
	return nil
}

// connAdmit is the queue-time gate of the connection ctx is served on, at
// now, for a request that arrived at arrival with a deadline T: true for
// connections that are not the exchange listener's.
func connAdmit(nc net.Conn, now, arrival time.Time, t time.Duration) bool {
	if c, ok := nc.(*exchangeConn); ok {
		return c.queue.admit(now, now.Sub(arrival), t)
	}
	return true
}

// connArrival is the arrival instant of the request ctx is serving: the
// receive time of the read that held its first byte, or now when the
// connection is not one of the exchange listener's (in-memory handlers).
func connArrival(nc net.Conn, k uint64) time.Time {
	if c, ok := nc.(*exchangeConn); ok {
		if at, ok := c.arrival(k); ok {
			return at
		}
	}
	return time.Now()
}
