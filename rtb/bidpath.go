package rtb

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/jsonraw"
	"github.com/bidguard/bidguard/pool"
)

// Headers bidguard writes or passes through.
const (
	hdrConfig   = "X-Bidguard-Config"
	hdrRejected = "X-Bidguard-Rejected"
	hdrOpenRTB  = "X-Openrtb-Version"
)

var strZero = []byte("0")

// The keys of the headers bidguard sets on its answers, in fasthttp's
// canonical form (TestHeaderKeysCanonical), for SetCanonical: the same
// header as SetBytesV would set, without normalizing a copy of the key.
var (
	keyConfig   = []byte(hdrConfig)
	keyRejected = []byte(hdrRejected)
)

// handle is the exchange-facing handler: routing and the checks of the HTTP
// behaviour table that need no body, then the bid path. Every panic under it
// is recovered by finish.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	arrival := connArrival(ctx.Conn(), ctx.ConnRequestNum())
	c := call{arrival: arrival}
	defer s.finish(ctx, &c)
	snap := s.holder.Load()
	if snap == nil {
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	st := s.stateFor(snap)
	c.st = st
	ctx.Response.Header.SetCanonical(keyConfig, st.version)
	up := st.route(ctx.Path())
	um := s.meters.none
	if up != nil {
		um = up.m
	}
	c.um = um
	switch {
	case !ctx.IsPost():
		ctx.Response.Header.Set("Allow", fasthttp.MethodPost)
		fail(ctx, um, fasthttp.StatusMethodNotAllowed, outBadRequest, msgMethod)
		return
	case up == nil:
		fail(ctx, um, fasthttp.StatusNotFound, outBadRequest, msgNoRoute)
		return
	}
	if ct := ctx.Request.Header.ContentType(); len(ct) > 0 && !isJSONType(ct) {
		fail(ctx, um, fasthttp.StatusUnsupportedMediaType, outBadRequest, msgContentType)
		return
	}
	gz := false
	if ce := ctx.Request.Header.ContentEncoding(); !isIdentity(ce) {
		if !isGzip(ce) {
			fail(ctx, um, fasthttp.StatusUnsupportedMediaType, outBadRequest, msgContentEncoding)
			return
		}
		gz = true
	}
	if s.draining.Load() {
		s.shed(ctx, um, shedShutdown)
		return
	}
	if up.pool.brk != nil && up.pool.brk.refuses() {
		s.shed(ctx, um, shedBreaker)
		return
	}
	// The in-flight limit first: its sheds, the many of an overload, skip
	// reading the body. A slot taken is given back by finish, whatever
	// answers the request.
	if !s.limiter.TryAcquire(s.gov.effective(st.limits.MaxInFlight)) {
		s.shed(ctx, um, shedInflight)
		return
	}
	c.slot = true
	// A request that waited until its budget is gone is shed before its
	// body is decoded (decoding is most of what a shed would cost): T is
	// read from the raw body's top-level tmax, or taken as maxTmaxMs when
	// that cannot be done cheaply (gzip, an unusual tmax).
	c.reserve = time.Duration(up.deadline.GateReserveMs)*time.Millisecond + s.gov.schedReserve()
	dl := up.deadline
	tMs := int64(dl.MaxTmaxMs)
	if !gz {
		if t, ok := peekTmax(ctx.Request.Body(), &c.members); ok {
			tMs, _ = engine.DeadlineFor(dl, t, arrival)
		}
	}
	d := arrival.Add(time.Duration(tMs-int64(dl.ReturnMarginMs)) * time.Millisecond)
	now := time.Now() // read by the budget check and the queue-time gate
	if slack := d.Sub(now); slack-c.reserve < time.Duration(dl.MinBidderMs)*time.Millisecond {
		// The governor counts the answer: one that leaves past D (the
		// request queued too long) is a sign of overload.
		s.gov.answered(slack)
		s.shed(ctx, um, shedBudget)
		return
	}
	if !connAdmit(ctx.Conn(), now, arrival, time.Duration(tMs)*time.Millisecond) {
		s.shed(ctx, um, shedQueue)
		return
	}
	s.bid(ctx, &c, up, arrival, gz)
}

// peekTmax reads the tmax of a bid request body without decoding it: the
// value of the last top-level member whose key encoding/json would match
// to tmax (0 when there is none), as the decoder will read it. ok is false
// when the body is not an object of well-formed members or a tmax value is
// not a plain integer: the caller then assumes the longest T. It allocates
// nothing.
func peekTmax(body []byte, rec *members) (tmax int64, ok bool) {
	rec.ok, rec.n = false, 0
	// jsonraw.Object and Members.Next's walk, inline: one loop over the
	// members without the iterator's state.
	i := jsonraw.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, false
	}
	fits := len(body) <= math.MaxInt32
	i++
	for first := true; ; first = false {
		if i = jsonraw.SkipSpace(body, i); i < len(body) && body[i] == '}' {
			rec.ok = fits
			return tmax, true
		}
		if !first {
			if i >= len(body) || body[i] != ',' {
				return tmax, false
			}
			i = jsonraw.SkipSpace(body, i+1)
		}
		if i >= len(body) || body[i] != '"' {
			return tmax, false
		}
		start := i
		keyEnd, escaped := jsonraw.StringEnd(body, i)
		if keyEnd < 0 {
			return tmax, false
		}
		if i = jsonraw.SkipSpace(body, keyEnd); i >= len(body) || body[i] != ':' {
			return tmax, false
		}
		v := jsonraw.SkipSpace(body, i+1)
		if i = jsonraw.ValueEnd(body, v); i < 0 {
			return tmax, false
		}
		isTmax := isTmaxKey(body[start+1:keyEnd-1], escaped)
		if isTmax {
			// Only a plain integer: the decoder rejects 7e1 and 70.0 for tmax.
			if tmax, ok = parseInt(body[v:i]); !ok {
				return 0, false
			}
		}
		if rec.n == maxMembers {
			fits = false
		}
		if fits {
			rec.spans[rec.n].s, rec.spans[rec.n].e, rec.spans[rec.n].tmax = int32(start), int32(i), isTmax
			rec.n++
		}
	}
}

// isTmaxKey is jsonraw.KeyIs(raw, "tmax") for the raw key of a string
// that holds a backslash escape when escaped is set. Without one the key
// matches only as four bytes that are tmax in ASCII case: no rune outside
// ASCII folds to t, m, a or x, so no longer key can match (c|0x20 is the
// lower-case letter exactly for that letter's two cases).
func isTmaxKey(raw []byte, escaped bool) bool {
	if escaped {
		return jsonraw.KeyIs(raw, "tmax")
	}
	return len(raw) == 4 && binary.LittleEndian.Uint32(raw)|0x20202020 == 'x'<<24|'a'<<16|'m'<<8|'t'
}

// parseInt parses a JSON integer of at most 18 digits.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// finish runs when the handler returns: it gives back the in-flight slot and
// the pooled state, or, after a panic, answers 204 and counts it.
func (s *Server) finish(ctx *fasthttp.RequestCtx, c *call) {
	if r := recover(); r != nil {
		// The panicked request's pooled state is left to the GC.
		s.recovered(ctx, c, r)
	} else {
		c.release()
	}
	now := time.Now()
	s.gov.spent(now.Sub(c.arrival) - c.waited)
	if c.slot {
		s.limiter.Release()
		if !c.called.IsZero() {
			s.gov.answered(c.called.Sub(now))
		}
	}
	if s.draining.Load() || s.leaving.Load() {
		ctx.SetConnectionClose()
	}
}

// call is one request's pooled state. None of it outlives the handler.
type call struct {
	stage   stage
	st      *state
	um      *upstreamMeters
	slot    bool          // holds an in-flight slot
	reserve time.Duration // kept after the bidder's answer: gateReserveMs and the scheduler's
	called  time.Time     // D, once the bidder was called (the governor's slack)
	arrival time.Time     // the request's arrival (connArrival)
	waited  time.Duration // in the upstream call: not bidguard's own time
	ev      *engine.Eval
	bc      *bidderCall  // the bidder's request and answer
	inBuf   *pool.Buffer // decompressed request
	respBuf *pool.Buffer // decompressed response
	// members: the request body's top-level members, when peekTmax read
	// them (not for gzip), for appendTmax.
	members members
}

func (c *call) release() {
	if c.ev != nil {
		engine.ReleaseEval(c.ev)
	}
	if c.bc != nil {
		releaseBidderCall(c.bc)
	}
	for _, b := range [...]*pool.Buffer{c.inBuf, c.respBuf} {
		if b != nil {
			pool.ReleaseBuffer(b)
		}
	}
}

// bid runs the bid path of docs/design.md from the body on: decode, deadlines,
// the upstream call, judging, the answer.
func (s *Server) bid(ctx *fasthttp.RequestCtx, c *call, up *upstream, arrival time.Time, gz bool) {
	st := c.st
	lim := st.limits
	body := ctx.Request.Body()
	if gz {
		c.inBuf = pool.AcquireBuffer()
		var err error
		c.inBuf.B, err = gunzip(c.inBuf.B[:0], body, lim.MaxRequestBytes)
		switch {
		case errors.Is(err, errTooLarge):
			tooLarge(ctx, up.m, lim.MaxRequestBytes)
			return
		case err != nil:
			fail(ctx, up.m, fasthttp.StatusBadRequest, outBadRequest, msgBadGzip)
			return
		}
		body = c.inBuf.B
	}
	if len(body) > lim.MaxRequestBytes {
		tooLarge(ctx, up.m, lim.MaxRequestBytes)
		return
	}
	c.ev = engine.AcquireEval()
	if err := c.ev.DecodeRequest(body); err != nil {
		badRequest(ctx, up.m, err.Error())
		return
	}
	switch {
	case c.ev.In.Request.ID == "":
		badRequest(ctx, up.m, "no id")
		return
	case len(c.ev.In.Request.Imp) == 0:
		badRequest(ctx, up.m, "no imp")
		return
	}

	// Deadlines: D from arrival, the bidder's budget B from now.
	dl := up.deadline
	_, deadline := engine.DeadlineFor(dl, c.ev.In.Request.TMax, arrival)
	now := time.Now()
	budget := deadline.Sub(now) - c.reserve
	if budget < time.Duration(dl.MinBidderMs)*time.Millisecond {
		s.gov.answered(deadline.Sub(now))
		s.shed(ctx, up.m, shedBudget)
		return
	}

	c.called = deadline
	c.stage = stageUpstream
	injectUpstreamFault(up.name)
	c.bc = acquireBidderCall()
	head, obody := s.outbound(c, ctx, up, body, int64(budget/time.Millisecond))
	// The call's start is now, read above: building the outbound request
	// takes a microsecond or two, not worth a second clock reading (one
	// costs 0.1-0.2 µs on some virtual machines).
	start := now
	kind, end, err := up.call(head, obody, &c.bc.resp, lim.MaxResponseBytes, start, now.Add(budget))
	latency := end - start.Sub(epoch) // end is monotonic()
	c.waited = latency
	c.stage = stageHandler
	if err != nil && errors.Is(err, errBreakerOpen) {
		s.shed(ctx, up.m, shedBreaker)
		return
	}
	up.m.duration.observe(latency)
	if err != nil {
		upstreamFailed(ctx, up, kind)
		return
	}
	switch status := c.bc.resp.StatusCode(); {
	case status == fasthttp.StatusNoContent:
		answer204(ctx, up.m, outNoBid)
		return
	case status >= 300 && status < 400:
		upstreamFailed(ctx, up, kindRedirect)
		return
	case status < 200 || status >= 300:
		upstreamFailed(ctx, up, kindHTTPStatus)
		return
	}
	rbody := c.bc.resp.Body()
	if ce := c.bc.resp.Header.ContentEncoding(); !isIdentity(ce) {
		if !isGzip(ce) {
			upstreamFailed(ctx, up, kindBadEncoding)
			return
		}
		c.respBuf = pool.AcquireBuffer()
		c.respBuf.B, err = gunzip(c.respBuf.B[:0], rbody, lim.MaxResponseBytes)
		switch {
		case errors.Is(err, errTooLarge):
			upstreamFailed(ctx, up, kindTooLarge)
			return
		case err != nil:
			upstreamFailed(ctx, up, kindDecompress)
			return
		}
		rbody = c.respBuf.B
	}
	if len(rbody) > lim.MaxResponseBytes {
		upstreamFailed(ctx, up, kindTooLarge)
		return
	}
	if jsonraw.SkipSpace(rbody, 0) == len(rbody) { // JSON's white space only: the decoder's no-bid
		answer204(ctx, up.m, outNoBid)
		return
	}
	// Every answer leaves by D: an answer that cannot be judged in the time
	// left is dropped unjudged. Judging starts when the call ended, or,
	// after a decompression, now.
	judgeStart := epoch.Add(end)
	if c.respBuf != nil {
		judgeStart = time.Now()
	}
	if !s.cost.fits(len(rbody), judgeStart, deadline) {
		s.shed(ctx, up.m, shedDeadline)
		return
	}
	if err := c.ev.DecodeResponse(rbody, lim.MaxBids); err != nil {
		upstreamFailed(ctx, up, kindBadJSON)
		return
	}

	c.ev.SetDeadline(arrival, deadline)
	c.ev.SetLatency(float64(latency) / float64(time.Millisecond))
	c.stage = stageGate
	out := c.ev.Run(st.snap, engine.RunOptions{Upstream: up.name, TimeGates: s.meters.timeGates()})
	c.stage = stageHandler
	if s.audit != nil && out.NumHits() > 0 {
		c.stage = stageAudit
		s.audit(st.snap, c.ev, out)
		c.stage = stageHandler
	}
	if s.judged != nil {
		s.judged(up.name, st.snap, c.ev, out)
	}
	if s.capt != nil {
		s.capt(up.name, st.snap, c.ev, out)
	}
	answer := c.ev.Body()
	if s.cost.learns(len(rbody)) {
		end := monotonic() // one reading: the sample's end and its time
		s.cost.observe(len(rbody), end-judgeStart.Sub(epoch), end)
	}
	s.meters.record(st.snap, st.m, c.ev, out)
	if out.NumHits() > 0 {
		s.rejects.record(st.snap.Config.Log.RejectionRate(), up.name, c.ev.In.Request.ID, out)
	}

	var nb [20]byte
	ctx.Response.Header.SetCanonical(keyRejected, strconv.AppendInt(nb[:0], int64(removed(c.ev, out)), 10))
	if answer == nil {
		o := outNoBid
		if !out.Passed() {
			o = outRejected
		}
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		up.m.requests[o].Inc()
		return
	}
	o := outBid
	switch {
	case out.Action == engine.Filter:
		o = outFiltered
	case out.Action == engine.NoBid:
		o = outRejected // a seatNonBid body without bids
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.Response.Header.SetContentTypeBytes(safeJSONType(c.bc.resp.Header.ContentType()))
	up.setAnswer(ctx, answer)
	up.m.requests[o].Inc()
}

// outbound builds the bidder's request in c.bc.out: the exchange's body
// with tmax rewritten to the budget, and the head of upstream.appendHead.
func (s *Server) outbound(c *call, ctx *fasthttp.RequestCtx, up *upstream, body []byte, tmaxMs int64) (head, out []byte) {
	b, ok := appendTmax(c.bc.out[:0], body, tmaxMs, &c.members)
	if !ok {
		// Not reachable for a request that decoded with an id; kept so the
		// bidder always gets a well-formed body.
		req := *c.ev.In.Request
		req.TMax = tmaxMs
		b, _ = json.Marshal(&req)
	}
	n := len(b)
	b = up.appendHead(b, ctx, n)
	c.bc.out = b
	return b[n:], b[:n]
}

// bidderCall is the pooled state of one call to the bidder: its answer and
// the bytes of the request sent, taken from the pool and given back
// together (one pool round trip, not one each). None of it outlives the
// handler.
type bidderCall struct {
	resp fasthttp.Response
	out  []byte // the outbound request: body, then head
}

// maxPooledOut is the largest outbound buffer kept in the pool (as
// pool.Buffer keeps): a rare large request's is left to the GC.
const maxPooledOut = 1 << 20

var bidderCalls = sync.Pool{New: func() any { return new(bidderCall) }}

func acquireBidderCall() *bidderCall { return bidderCalls.Get().(*bidderCall) }

// releaseBidderCall empties b, as fasthttp.ReleaseResponse empties a
// response, and returns it to the pool.
func releaseBidderCall(b *bidderCall) {
	b.resp.Reset()
	if cap(b.out) > maxPooledOut {
		b.out = nil
	}
	b.out = b.out[:0]
	bidderCalls.Put(b)
}

// removed is the X-Bidguard-Rejected count: the bids removed from the answer.
func removed(ev *engine.Eval, out *engine.Outcome) int {
	if info := ev.Info(); info.TooManyBids {
		if out.Response.Rejected() {
			return info.BidCount
		}
		return 0
	}
	return len(ev.In.Bids) - out.Kept
}

// The texts of 4xx answers (docs/design.md "HTTP behaviour of serve"): one line
// chosen by bidguard, never the request's bytes.
const (
	msgMethod          = "method not allowed: use POST"
	msgNoRoute         = "no upstream routes this path"
	msgContentType     = "unsupported Content-Type: use application/json"
	msgContentEncoding = "unsupported Content-Encoding: use gzip or identity"
	msgBadGzip         = "malformed bid request: corrupt gzip body"
	msgMalformed       = "malformed bid request: "
	msgHeaders         = "request headers too large"
	msgTimeout         = "request not received in time"
	msgBadHTTP         = "malformed HTTP request"
	// maxReasonLen cuts a decode error in a 400 answer.
	maxReasonLen = 200
)

var textPlain = []byte("text/plain; charset=utf-8")

// fail answers status with the one-line text msg.
func fail(ctx *fasthttp.RequestCtx, um *upstreamMeters, status int, o outcome, msg string) {
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentTypeBytes(textPlain)
	ctx.Response.ResetBody()
	ctx.Response.AppendBodyString(msg)
	ctx.Response.AppendBodyString("\n")
	um.requests[o].Inc()
}

// badRequest is a 400 for a bid request that did not decode: the reason
// with control characters and non-ASCII replaced and cut to maxReasonLen.
func badRequest(ctx *fasthttp.RequestCtx, um *upstreamMeters, reason string) {
	var b [len(msgMalformed) + maxReasonLen + 3]byte
	out := append(b[:0], msgMalformed...)
	for i := 0; i < len(reason); i++ {
		if i == maxReasonLen {
			out = append(out, "..."...)
			break
		}
		c := reason[i]
		if c < 0x20 || c > 0x7e {
			c = ' '
		}
		out = append(out, c)
	}
	fail(ctx, um, fasthttp.StatusBadRequest, outBadRequest, string(out))
}

// tooLarge is the 413 for a body over limit bytes.
func tooLarge(ctx *fasthttp.RequestCtx, um *upstreamMeters, limit int) {
	var b [48]byte
	out := strconv.AppendInt(append(b[:0], "body over "...), int64(limit), 10)
	fail(ctx, um, fasthttp.StatusRequestEntityTooLarge, outTooLarge, string(append(out, " bytes"...)))
}

// answer204 is a no-bid answer before or without judging.
func answer204(ctx *fasthttp.RequestCtx, um *upstreamMeters, o outcome) {
	ctx.Response.Header.SetCanonical(keyRejected, strZero)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	ctx.Response.ResetBody()
	um.requests[o].Inc()
}

func (s *Server) shed(ctx *fasthttp.RequestCtx, um *upstreamMeters, why shedReason) {
	s.meters.shed[why].Inc()
	answer204(ctx, um, outShed)
}

// upstreamFailed answers a bidder failure: 204, or with onError: status 504
// for a timeout and 502 for every other kind, with a line naming the kind.
func upstreamFailed(ctx *fasthttp.RequestCtx, up *upstream, k errKind) {
	up.m.errors[k].Inc()
	if !up.statusOnErr {
		answer204(ctx, up.m, outUpstreamError)
		return
	}
	status := fasthttp.StatusBadGateway
	if k == kindTimeout {
		status = fasthttp.StatusGatewayTimeout
	}
	ctx.Response.Header.SetCanonical(keyRejected, strZero)
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentTypeBytes(textType)
	ctx.Response.SetBodyString(failureText[k])
	up.m.requests[outUpstreamError].Inc()
}

// failureText is the body of a 502/504 answer, by kind.
var failureText = func() (t [numKinds]string) {
	for k := range t {
		t[k] = "bidder failed: " + kindNames[k] + "\n"
	}
	return t
}()

var textType = []byte("text/plain; charset=utf-8")

// recovered answers a panicked request with a 204 and counts it.
func (s *Server) recovered(ctx *fasthttp.RequestCtx, c *call, r any) {
	ctx.Response.Reset()
	ctx.Response.Header.SetNoDefaultContentType(true)
	if c.st != nil {
		ctx.Response.Header.SetCanonical(keyConfig, c.st.version)
	}
	um := c.um
	if um == nil {
		um = s.meters.none
	}
	s.meters.panics[c.stage].Inc()
	answer204(ctx, um, outPanic)
	s.logLimited("panic recovered in the bid path", "where", stageNames[c.stage], "panic", r, "stack", string(debug.Stack()))
}

// handleError answers requests fasthttp could not read, each with its line
// of text: 400 for a framing error (framer: smuggling probes and the like)
// or an unparsable request, 413 over the body cap, 431 for oversized
// headers, 408 on a read timeout. fasthttp closes the connection after it.
func (s *Server) handleError(ctx *fasthttp.RequestCtx, err error) {
	// The write deadline of the connection's previous answer may have
	// passed while this request stalled: without a new one the 408 would
	// never leave.
	if nc := ctx.Conn(); nc != nil {
		_ = nc.SetWriteDeadline(time.Now().Add(s.srv.WriteTimeout))
	}
	um := s.meters.none
	maxBody := s.srv.MaxRequestBodySize
	if snap := s.holder.Load(); snap != nil {
		st := s.stateFor(snap)
		ctx.Response.Header.SetCanonical(keyConfig, st.version)
		if up := st.route(ctx.Path()); up != nil {
			um = up.m
		}
	}
	var small *fasthttp.ErrSmallBuffer
	fe := connFramingError(ctx.Conn())
	switch {
	case fe != nil || errors.As(err, &fe):
		fail(ctx, um, fasthttp.StatusBadRequest, outBadRequest, fe.Error())
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		tooLarge(ctx, um, maxBody)
	case errors.As(err, &small):
		fail(ctx, um, fasthttp.StatusRequestHeaderFieldsTooLarge, outBadRequest, msgHeaders)
	case isTimeout(err):
		fail(ctx, um, fasthttp.StatusRequestTimeout, outBadRequest, msgTimeout)
	default:
		fail(ctx, um, fasthttp.StatusBadRequest, outBadRequest, msgBadHTTP)
	}
}
