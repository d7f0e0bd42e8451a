package gates

// The JSON walker shared by the scanning gates filesystem, pii and content
// (GATES.md, "Scan limit"). It visits the values of a response in document
// order, hands every string value, with its JSON escapes decoded, to the
// gate's stringMatcher, never looks at keys, counts every value (object,
// array, string, number, literal) against maxNodes, and attributes each hit
// to the bid it lies in (codes 200 / 350) or to the response (3 / 300).
//
// Which values it visits:
//   - in the default policy (Scope.ResponseLevel), the top-level members of
//     the raw response in document order; at the first top-level key that
//     equals "seatbid" case-insensitively (the key encoding/json decoded),
//     the seatbids: the array, each seatbid object, its seat, group and ext
//     (response-level values), its bid array and each in-scope bid from the
//     bid's own raw bytes (Bid.Raw); other "seatbid" keys are skipped;
//   - in a seat policy, only the in-scope bids.
//
// A bid out of scope (another policy's, or rejected earlier under failFast)
// is neither scanned nor counted. The first hit of a bid is reported and the
// rest of that bid skipped; the first response-level hit is reported and the
// later response-level values are only counted. The walker allocates nothing
// per value: strings without escapes are matched in place, the others are
// decoded into a pooled buffer.

import (
	"bytes"
	"errors"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/jsonraw"
)

// stringMatcher judges one decoded string value. It returns the reason of its
// first hit, or "" for none. s is only valid during the call.
type stringMatcher interface {
	match(s []byte) string
}

// scanScope is what the walker uses of *engine.Scope; benchmarks and tests
// pass a fake.
type scanScope interface {
	InScope(i int) bool
	ResponseLevel() bool
	Tick() bool
	Hit(i int, v engine.Verdict) bool
}

var _ scanScope = (*engine.Scope)(nil)

// Scan limit defaults and values (GATES.md, "Scan limit").
const (
	defaultMaxNodes   = 10000
	onScanLimitFail   = "fail"
	onScanLimitPass   = "pass"
	reasonScanLimit   = "scan limit exceeded"
	scanBidLoss       = 200
	scanBidNBR        = 350
	scanResponseLoss  = 3
	scanResponseNBR   = 300
	maxPooledScanBuf  = 64 << 10
	initialScanBufCap = 256
)

// scanLimit is the compiled scan-limit options of a scanning gate.
type scanLimit struct {
	maxNodes int
	pass     bool // onScanLimit: pass
}

// newScanLimit validates maxNodes and onScanLimit ("" means the default).
func newScanLimit(maxNodes int, onScanLimit string) (scanLimit, error) {
	var errs []error
	if maxNodes <= 0 {
		errs = append(errs, errors.New("maxNodes must be > 0"))
	}
	switch onScanLimit {
	case "", onScanLimitFail, onScanLimitPass:
	default:
		errs = append(errs, errors.New("onScanLimit must be fail or pass"))
	}
	return scanLimit{maxNodes: maxNodes, pass: onScanLimit == onScanLimitPass}, errors.Join(errs...)
}

type walkMode uint8

const (
	modeScan  walkMode = iota // count and match
	modeCount                 // count only
	modeSkip                  // neither: find the end of the value
)

// walker is the per-request state of one scan. It is pooled: it must not be
// retained after scanResponse returns.
type walker struct {
	buf   []byte
	nodes int
	max   int
	m     stringMatcher
	in    *engine.Input
	sc    scanScope

	respMode walkMode // modeScan until the first response-level hit
	stop     bool     // the scope said stop
	over     bool     // the scan limit was exceeded
	overBid  int      // first bid not fully scanned when over (seat policy)
}

var walkerPool = sync.Pool{New: func() any { return &walker{buf: make([]byte, 0, initialScanBufCap)} }}

// scanResponse walks in for the matcher m under the scope sc and reports
// every hit, and a scan limit overrun, through sc.
func scanResponse(in *engine.Input, sc scanScope, m stringMatcher, lim scanLimit) {
	w := walkerPool.Get().(*walker)
	*w = walker{buf: w.buf[:0], max: lim.maxNodes, m: m, in: in, sc: sc, overBid: -1}
	if sc.ResponseLevel() {
		w.response(in.RawResponse)
	} else {
		w.bids(0, len(in.Bids))
	}
	if w.over && !w.stop && !lim.pass {
		w.limitExceeded()
	}
	buf := w.buf
	if cap(buf) > maxPooledScanBuf {
		buf = make([]byte, 0, initialScanBufCap)
	}
	*w = walker{buf: buf[:0]}
	walkerPool.Put(w)
}

// limitExceeded reports the overrun: a response-level hit in the default
// policy (unless the response already has this gate's hit), else a hit on
// every in-scope bid not fully scanned.
func (w *walker) limitExceeded() {
	if w.sc.ResponseLevel() {
		if w.respMode == modeScan {
			w.sc.Hit(-1, engine.Reject(reasonScanLimit, scanResponseLoss, scanResponseNBR))
		}
		return
	}
	for k := w.overBid; k >= 0 && k < len(w.in.Bids); k++ {
		if w.sc.InScope(k) && !w.sc.Hit(k, engine.Reject(reasonScanLimit, scanResponseLoss, scanResponseNBR)) {
			return
		}
	}
}

// count visits one value; false when it is over the limit.
func (w *walker) count() bool {
	w.nodes++
	if w.nodes > w.max {
		w.over = true
		return false
	}
	return true
}

// done reports whether the walk must end.
func (w *walker) done() bool { return w.stop || w.over }

// respHit reports a response-level hit; later response-level values are
// only counted.
func (w *walker) respHit(reason string) {
	w.respMode = modeCount
	if !w.sc.Hit(-1, engine.Reject(reason, scanResponseLoss, scanResponseNBR)) {
		w.stop = true
	}
}

// response walks the raw response document in the default policy.
func (w *walker) response(raw []byte) {
	i := skipSpace(raw, 0)
	if i >= len(raw) {
		return
	}
	if raw[i] != '{' {
		if _, reason := w.value(raw, i, w.respMode, false); reason != "" && !w.over {
			w.respHit(reason)
		}
		return
	}
	if !w.count() {
		return
	}
	i++
	seatbids := false
	for !w.done() {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] == '}' {
			return
		}
		if raw[i] == ',' {
			i++
			continue
		}
		if raw[i] != '"' {
			return // not reached: the document was decoded
		}
		end, esc := stringEnd(raw, i+1)
		key := raw[i+1 : end]
		if esc {
			key = w.unescape(key)
		}
		isSeatbid := bytes.EqualFold(key, []byte("seatbid"))
		i = skipSpace(raw, end+1)
		if i < len(raw) && raw[i] == ':' {
			i = skipSpace(raw, i+1)
		}
		if isSeatbid {
			i = w.skipSeatbid(raw, i)
			if !seatbids {
				seatbids = true
				w.seatbids()
			}
			continue
		}
		var reason string
		i, reason = w.value(raw, i, w.respMode, false)
		if reason != "" && !w.over {
			w.respHit(reason)
		}
	}
}

// skipSeatbid returns the index just past the raw seatbid value at data[i].
// Each bid's raw bytes appear verbatim in it (encoding/json copies them
// exactly), so it jumps over them, in order, instead of reading them.
func (w *walker) skipSeatbid(data []byte, i int) int {
	bids := w.in.Bids
	next, depth := 0, 0
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
			continue
		case '"':
			end, _ := stringEnd(data, i+1)
			i = end + 1
		case '{':
			if depth > 0 && next < len(bids) && bytes.HasPrefix(data[i:], bids[next].Raw) {
				i += len(bids[next].Raw)
				next++
				continue
			}
			depth++
			i++
			continue
		case '[':
			depth++
			i++
			continue
		case '}', ']':
			depth--
			i++
		default:
			for i < len(data) && !isValueEnd(data[i]) {
				i++
			}
		}
		if depth <= 0 {
			return i
		}
	}
	return i
}

// seatbids walks the decoded seatbids: their non-bid values at response
// level, their bids from the bids' raw bytes.
func (w *walker) seatbids() {
	if !w.count() {
		return
	}
	resp, bids := w.in.Response, w.in.Bids
	if resp == nil {
		return
	}
	k := 0
	for si := range resp.SeatBid {
		sb := &resp.SeatBid[si]
		if !w.count() {
			return
		}
		if sb.Seat != "" {
			if !w.count() {
				return
			}
			if w.respMode == modeScan {
				if reason := w.m.match(stringBytes(sb.Seat)); reason != "" {
					w.respHit(reason)
				}
			}
		}
		if sb.Group != 0 && !w.count() {
			return
		}
		if len(sb.Ext) > 0 {
			if _, reason := w.value(sb.Ext, skipSpace(sb.Ext, 0), w.respMode, false); reason != "" && !w.over {
				w.respHit(reason)
			}
		}
		if w.done() {
			return
		}
		if len(sb.Bid) > 0 && !w.count() {
			return
		}
		start := k
		for k < len(bids) && bids[k].SeatIndex == si {
			k++
		}
		if w.done() {
			return
		}
		w.bids(start, k)
		if w.done() {
			return
		}
	}
}

// bids walks the in-scope bids of in.Bids[from:to].
func (w *walker) bids(from, to int) {
	for k := from; k < to; k++ {
		if !w.sc.InScope(k) {
			continue
		}
		if !w.sc.Tick() {
			w.stop = true
			return
		}
		raw := w.in.Bids[k].Raw
		_, reason := w.value(raw, skipSpace(raw, 0), modeScan, true)
		if w.over {
			w.overBid = k
			return
		}
		if reason != "" && !w.sc.Hit(k, engine.Reject(reason, scanBidLoss, scanBidNBR)) {
			w.stop = true
			return
		}
	}
}

// value walks the one JSON value that starts at data[i] and returns the index
// just past it with the first hit's reason. With stopOnHit it returns at the
// hit (the rest of the value unvisited); otherwise it goes on counting. It
// also returns early when the limit is exceeded (w.over).
func (w *walker) value(data []byte, i int, mode walkMode, stopOnHit bool) (int, string) {
	depth := 0
	first := ""
	for i < len(data) {
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
			continue
		case '{', '[':
			if mode != modeSkip && !w.count() {
				return i, first
			}
			depth++
			i++
			continue
		case '}', ']':
			depth--
			i++
		case '"':
			end, esc := stringEnd(data, i+1)
			body := data[i+1 : end]
			i = end + 1
			if depth > 0 && isKey(data, i) {
				continue
			}
			if mode != modeSkip {
				if !w.count() {
					return i, first
				}
				if mode == modeScan {
					if esc {
						body = w.unescape(body)
					}
					if reason := w.m.match(body); reason != "" {
						first = reason
						if stopOnHit {
							return i, first
						}
						mode = modeCount
					}
				}
			}
		default: // number or literal
			if mode != modeSkip && !w.count() {
				return i, first
			}
			for i < len(data) && !isValueEnd(data[i]) {
				i++
			}
		}
		if depth <= 0 {
			return i, first
		}
	}
	return i, first
}

// isKey reports whether the string that ended just before data[i] is an
// object key: the next non-space byte is ':'.
func isKey(data []byte, i int) bool {
	i = skipSpace(data, i)
	return i < len(data) && data[i] == ':'
}

func isValueEnd(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index of the quote that closes the string whose body
// starts at data[i], and whether the body holds escapes.
func stringEnd(data []byte, i int) (int, bool) {
	esc := false
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data), esc
		}
		b := bytes.IndexByte(data[i:i+q], '\\')
		if b < 0 {
			return i + q, esc
		}
		esc = true
		i += b + 2 // the backslash and the byte it escapes
		if i > len(data) {
			return len(data), esc
		}
	}
}

// unescape decodes the JSON escapes of a string body into the walker's
// buffer, as encoding/json does (a lone surrogate becomes U+FFFD). The
// result is valid until the next call.
func (w *walker) unescape(body []byte) []byte {
	out := w.buf[:0]
	for len(body) > 0 {
		b := bytes.IndexByte(body, '\\')
		if b < 0 || b+1 >= len(body) {
			out = append(out, body...)
			break
		}
		out = append(out, body[:b]...)
		r, next := jsonraw.Rune(body, b) // one escape, resolved as encoding/json does
		out = utf8.AppendRune(out, r)
		body = body[next:]
	}
	w.buf = out
	return out
}

// stringBytes views s as bytes without copying; the bytes must not be
// modified or retained.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
