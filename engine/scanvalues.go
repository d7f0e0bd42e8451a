package engine

import (
	"unicode/utf8"
	"unsafe"

	"github.com/bidguard/bidguard/jsonraw"
)

// ScanValues is the bid response as the scanning gates see it
// (docs/gates.md, "Scanning" and "Scan limit"): every value of the raw
// document in document order, cut into segments that each lie in one bid or
// outside every bid (the envelope), each knowing where it starts in its
// bid's (the envelope's) scan budget, with the string values decoded as
// encoding/json decodes them. The engine builds it once per request, when
// the first scanning gate asks for it (Scope.Values); every scanning gate
// then matches its strings from it under its own budgets, scope and mode.
//
// The walk reads the raw document, not the decoded structs: the tokens the
// validating pass recorded (jsonraw.ValidateTokens), or, for an Input built
// without them, the bytes (the same table: checkScanValues). Keys that
// encoding/json shadows (a repeated key, a case variant) have their values
// in the document, and they are scanned like any other. A value is a bid's
// when it lies at seatbid[i].bid[j] or below it, "seatbid" and "bid" being
// matched as encoding/json matches keys (jsonraw.KeyIs) at every occurrence,
// and bid (i, j) being decoded (Input.Bids); every other value is
// response-level.
//
// Keys are neither values nor counted. A ScanValues belongs to an Eval and
// must not be retained after the Eval is released; it is not safe for
// concurrent use. The strings it returns alias the document or its own
// buffer: they must not be modified or retained.
type ScanValues struct {
	raw []byte
	// budget counts, while Build runs, the values of each bid (by index in
	// Input.Bids) and, last, of the envelope: ScanSegment.Before.
	budget []int32
	// first is, by bid, the index of its first segment, or -1.
	first []int32
	buf   []byte // strings that differ from their bytes (escapes, invalid UTF-8)
	// ext are strings the decoder already decoded (Input.responseDecoded).
	ext   []string
	segs  []ScanSegment
	strs  []scanString
	built bool
}

// ScanSegment is a run of consecutive values of the document that lie in one
// bid, or outside every bid.
type ScanSegment struct {
	// Bid is the index in Input.Bids of the bid the values lie in, or -1 for
	// response-level values. One bid may own several segments (a shadowed
	// copy of seatbid[i].bid[j] also lies at that path).
	Bid int
	// Nodes is how many values the segment holds: objects, arrays, strings,
	// numbers and literals alike.
	Nodes int
	// Before is how many values of the same bid (or of the envelope, the
	// values outside every bid) earlier segments hold: the segment's n-th
	// value is value Before+n of its bid's (the envelope's) scan budget.
	Before int
	// Next is the index in Segments of the bid's next segment, or -1
	// (FirstSegment gives the first).
	Next int
	// first and end delimit its strings in ScanValues.strs.
	first, end int
}

// Strings returns how many string values the segment holds.
func (s *ScanSegment) Strings() int { return s.end - s.first }

// scanString is one string value: its decoded bytes in the document, in
// the buffer or in ext (off the index there), their length, and its
// position among its segment's values, from 1. The length is kept for every
// string, so that a gate skips the strings too short for its matcher with a
// comparison each.
type scanString struct {
	off  int32
	size int32
	node int32
	in   uint8 // inRaw, inBuf or inExt
}

// Where a scanString's bytes are.
const (
	inRaw uint8 = iota
	inBuf
	inExt
)

// What a pooled ScanValues keeps between requests, at most.
const (
	maxPooledScanStrings = 8 << 10
	maxPooledScanBuf     = 64 << 10
	maxPooledScanBudget  = 4 << 10
)

// Segments returns the segments in document order. The slice belongs to v.
func (v *ScanValues) Segments() []ScanSegment { return v.segs }

// String returns the i-th string value of seg, decoded, and its position
// among the segment's values (1 for the segment's first value).
func (v *ScanValues) String(seg *ScanSegment, i int) (s []byte, node int) {
	return v.bytes(&v.strs[seg.first+i]), int(v.strs[seg.first+i].node)
}

// bytes returns the decoded bytes of st.
func (v *ScanValues) bytes(st *scanString) []byte {
	if st.in == inRaw { // the most common
		return v.raw[st.off : st.off+st.size]
	}
	if st.in == inBuf {
		return v.buf[st.off : st.off+st.size]
	}
	s := v.ext[st.off]
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// SegmentStrings is the string values of one segment, read by index like
// ScanValues.String, fetched once per segment. It is valid as long as the
// ScanValues is.
type SegmentStrings struct {
	strs []scanString
	v    *ScanValues
}

// StringsOf returns seg's string values.
func (v *ScanValues) StringsOf(seg *ScanSegment) SegmentStrings {
	return SegmentStrings{strs: v.strs[seg.first:seg.end], v: v}
}

// Len returns how many string values the segment holds.
func (ss *SegmentStrings) Len() int { return len(ss.strs) }

// Size returns the length of the i-th string value decoded, without
// fetching it: a matcher that cannot hit short strings skips them cheaply.
func (ss *SegmentStrings) Size(i int) int { return int(ss.strs[i].size) }

// At returns the i-th string value, decoded, and its position among the
// segment's values (1 for the segment's first value): ScanValues.String.
func (ss *SegmentStrings) At(i int) (s []byte, node int) {
	st := &ss.strs[i]
	return ss.v.bytes(st), int(st.node)
}

// Skip returns the index of the first string value from i on that is at
// least n bytes long decoded, or Len when none is: a matcher that cannot hit
// shorter strings steps over them with a comparison each.
func (ss *SegmentStrings) Skip(i, n int) int {
	for i < len(ss.strs) && int(ss.strs[i].size) < n {
		i++
	}
	return i
}

// reset empties v for another request, keeping its storage unless it grew
// beyond what the pool keeps.
func (v *ScanValues) reset() {
	if cap(v.strs) > maxPooledScanStrings {
		v.strs, v.segs = nil, nil
	}
	if cap(v.buf) > maxPooledScanBuf {
		v.buf = nil
	}
	if cap(v.budget) > maxPooledScanBudget {
		v.budget, v.first = nil, nil
	}
	*v = ScanValues{buf: v.buf[:0], segs: v.segs[:0], strs: v.strs[:0], budget: v.budget[:0], first: v.first[:0]}
}

// Build walks in.RawResponse, which jsonraw.Validate accepted and which was
// decoded into in.Bids. The engine calls it once per request; tests and
// benchmarks of scanning gates may call it on their own Input. It allocates
// nothing once its storage has grown to the document's needs. On malformed
// input it stops where the document stops making sense, without panicking.
func (v *ScanValues) Build(in *Input) {
	v.reset()
	v.raw, v.built, v.ext = in.RawResponse, true, in.responseDecoded
	if len(v.raw) > 1<<31-1 {
		return // offsets are int32; far beyond limits.maxResponseBytes
	}
	w := scanBuilder{v: v, bids: in.Bids, validUTF8: in.rawResponseUTF8}
	n := len(in.Bids) + 1
	if cap(v.budget) < n {
		v.budget = make([]int32, n)
	}
	v.budget = v.budget[:n]
	clear(v.budget)
	w.open(-1)
	if in.responseTokens != nil {
		w.walkTokens(in.responseTokens)
	} else {
		w.walk()
	}
	w.close()
	v.link(len(in.Bids))
}

// FirstSegment returns the index in Segments of bid's first segment, or -1
// when the bid holds no value (an index out of range included).
func (v *ScanValues) FirstSegment(bid int) int {
	if bid < 0 || bid >= len(v.first) {
		return -1
	}
	return int(v.first[bid])
}

// link chains each bid's segments (first, Next), reusing budget, whose
// counts are in the segments now, for each bid's last segment.
func (v *ScanValues) link(bids int) {
	if cap(v.first) < bids {
		v.first = make([]int32, bids)
	}
	v.first = v.first[:bids]
	for i := range v.first {
		v.first[i] = -1
	}
	last := v.budget
	for si := range v.segs {
		seg := &v.segs[si]
		seg.Next = -1
		if seg.Bid < 0 || seg.Bid >= bids {
			continue
		}
		if v.first[seg.Bid] < 0 {
			v.first[seg.Bid] = int32(si)
		} else {
			v.segs[last[seg.Bid]].Next = si
		}
		last[seg.Bid] = int32(si)
	}
}

// Frame roles: the containers on the way from the document to a bid.
const (
	roleRoot     uint8 = iota // the top-level object
	roleSeatbids              // a seatbid array
	roleSeatbid               // one seatbid object
	roleBids                  // a bid array
)

// scanFrame is one open container on the path to the bids.
type scanFrame struct {
	role uint8
	// special: the object member being read is "seatbid" (root) or "bid"
	// (seatbid).
	special bool
	// next is the index of the next element (arrays).
	next int
	// seat is the seatbid index (roleSeatbid, roleBids); first is the index
	// in Input.Bids of that seatbid's first decoded bid, or -1.
	seat, first int
}

// scanBuilder is the state of one Build.
type scanBuilder struct {
	v    *ScanValues
	bids []Bid
	// validUTF8: the document is known to be valid UTF-8.
	validUTF8 bool
	frames    [4]scanFrame
	sd        int // frames open
	// pd is the depth inside containers off the path to the bids (and
	// inside a bid); inBid tells that the outermost of them is a bid.
	pd     int
	inBid  bool
	cursor int // Input.Bids scan position within one seatbid array
	cur    int // the open segment: v.segs[cur]
}

// open starts a segment owned by bid (or the envelope when -1).
func (w *scanBuilder) open(bid int) {
	v := w.v
	v.segs = append(v.segs, ScanSegment{Bid: bid, Before: int(v.budget[w.owner(bid)]), first: len(v.strs), end: len(v.strs)})
	w.cur = len(v.segs) - 1
}

// close ends the open segment, dropping it when it holds no value.
func (w *scanBuilder) close() {
	v := w.v
	seg := &v.segs[w.cur]
	if seg.Nodes == 0 {
		v.segs = v.segs[:w.cur]
		return
	}
	v.budget[w.owner(seg.Bid)] += int32(seg.Nodes)
}

// owner is the index in ScanValues.budget of bid's count (-1: the envelope's).
func (w *scanBuilder) owner(bid int) int {
	if bid < 0 {
		return len(w.v.budget) - 1
	}
	return bid
}

// walk visits every value of the document in order.
func (w *scanBuilder) walk() {
	b := w.v.raw
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		case '"':
			end, esc := jsonraw.StringEnd(b, i)
			if end < 0 {
				return
			}
			if j := jsonraw.SkipSpace(b, end); j < len(b) && b[j] == ':' {
				w.key(b[i+1 : end-1])
				i = j + 1
				continue
			}
			w.value()
			w.str(i+1, end-1, esc, w.v.segs[w.cur].Nodes)
			w.v.segs[w.cur].end = len(w.v.strs)
			w.scalarEnd()
			i = end
		case '{', '[':
			w.value()
			w.enter(c)
			i++
		case '}', ']':
			if !w.leave() {
				return
			}
			i++
		default: // a number or a literal
			end := jsonraw.ValueEnd(b, i)
			if end < 0 {
				return
			}
			w.value()
			w.scalarEnd()
			i = end
		}
	}
}

// walkTokens is walk over the tokens the validating pass recorded. A bid
// that is an object is read by bidTokens, from its opener to its closer.
func (w *scanBuilder) walkTokens(toks []jsonraw.Token) {
	b := w.v.raw
	for i := 0; i < len(toks); i++ {
		t := &toks[i]
		switch t.Kind {
		case jsonraw.TokKey:
			w.key(b[t.Off+1 : t.End-1])
		case jsonraw.TokString:
			w.value()
			w.strToken(t, w.v.segs[w.cur].Nodes)
			w.v.segs[w.cur].end = len(w.v.strs)
			w.scalarEnd()
		case jsonraw.TokObject:
			w.value()
			w.enter('{')
			// t.Next is the index of the token after the closer.
			if end := int(t.Next) - 1; w.inBid && w.pd == 1 && end > i && end < len(toks) && toks[end].Kind == jsonraw.TokClose {
				w.bidTokens(toks[i+1 : end])
				i = end - 1 // the closer ends the bid
			}
		case jsonraw.TokArray:
			w.value()
			w.enter('[')
		case jsonraw.TokClose:
			if !w.leave() {
				return
			}
		case jsonraw.TokScalar:
			w.value()
			w.scalarEnd()
		}
	}
}

// bidTokens records the values of a bid object, toks being its members:
// inside a bid every value only counts, and its strings are recorded (key,
// enter and leave change nothing there until the bid's closer).
func (w *scanBuilder) bidTokens(toks []jsonraw.Token) {
	v := w.v
	nodes := v.segs[w.cur].Nodes
	strs := v.strs
	for i := range toks {
		t := &toks[i]
		switch t.Kind {
		case jsonraw.TokKey, jsonraw.TokClose:
			continue
		case jsonraw.TokString:
			nodes++
			switch {
			case t.Next != 0: // decoded by the decoder
				strs = append(strs, scanString{off: int32(t.Next) - 1, size: int32(len(v.ext[t.Next-1])), node: int32(nodes), in: inExt})
			case t.Escaped || !w.validUTF8:
				v.strs = strs
				w.str(int(t.Off)+1, int(t.End)-1, t.Escaped, nodes)
				strs = v.strs
			default: // the document's bytes as they are
				strs = append(strs, scanString{off: int32(t.Off) + 1, size: int32(t.End-t.Off) - 2, node: int32(nodes)})
			}
		default:
			nodes++
		}
	}
	v.strs = strs
	seg := &v.segs[w.cur]
	seg.Nodes = nodes
	seg.end = len(strs)
}

// strToken records the string value of token t, the node-th value of the
// open segment.
func (w *scanBuilder) strToken(t *jsonraw.Token, node int) {
	if t.Next != 0 { // decoded by the decoder
		w.v.strs = append(w.v.strs, scanString{off: int32(t.Next) - 1, size: int32(len(w.v.ext[t.Next-1])), node: int32(node), in: inExt})
		return
	}
	w.str(int(t.Off)+1, int(t.End)-1, t.Escaped, node)
}

// key reads an object key: on the path to the bids it marks the member that
// leads on.
func (w *scanBuilder) key(raw []byte) {
	if w.pd > 0 || w.sd == 0 {
		return
	}
	f := &w.frames[w.sd-1]
	switch f.role {
	case roleRoot:
		f.special = jsonraw.KeyIs(raw, "seatbid")
	case roleSeatbid:
		f.special = jsonraw.KeyIs(raw, "bid")
	}
}

// value counts a value that starts here and, on the path to the bids,
// decides what it is: a bid opens the bid's segment.
func (w *scanBuilder) value() {
	if w.pd == 0 && w.sd > 0 {
		f := &w.frames[w.sd-1]
		switch f.role {
		case roleSeatbids:
			f.next++
		case roleBids:
			j := f.next
			f.next++
			if k := w.bidAt(f.seat, f.first, j); k >= 0 {
				w.close()
				w.open(k)
				w.inBid = true
			}
		}
	}
	w.v.segs[w.cur].Nodes++
}

// enter opens the container whose first byte is c, after value counted it.
func (w *scanBuilder) enter(c byte) {
	if w.pd > 0 || w.inBid {
		w.pd++
		return
	}
	var parent *scanFrame
	if w.sd > 0 {
		parent = &w.frames[w.sd-1]
	}
	role, ok := uint8(0), false
	switch {
	case parent == nil:
		role, ok = roleRoot, c == '{'
	case parent.role == roleRoot:
		role, ok = roleSeatbids, c == '[' && parent.special
	case parent.role == roleSeatbids:
		role, ok = roleSeatbid, c == '{'
	case parent.role == roleSeatbid:
		role, ok = roleBids, c == '[' && parent.special
	}
	if !ok {
		w.pd++
		return
	}
	f := scanFrame{role: role, seat: -1, first: -1}
	switch role {
	case roleSeatbids:
		w.cursor = 0
	case roleSeatbid:
		f.seat = parent.next - 1 // value counted the element
		f.first = w.firstBidOf(f.seat)
	case roleBids:
		f.seat, f.first = parent.seat, parent.first
	}
	w.frames[w.sd] = f
	w.sd++
}

// leave closes the innermost container; false on a stray closer.
func (w *scanBuilder) leave() bool {
	if w.pd > 0 {
		w.pd--
		if w.pd == 0 && w.inBid {
			w.endBid()
		}
		return true
	}
	if w.sd == 0 {
		return false
	}
	w.sd--
	return true
}

// scalarEnd ends a value that is a string, number or literal: when it was a
// bid element by itself, the bid's segment ends with it.
func (w *scanBuilder) scalarEnd() {
	if w.pd == 0 && w.inBid {
		w.endBid()
	}
}

func (w *scanBuilder) endBid() {
	w.inBid = false
	w.close()
	w.open(-1)
}

// str records the string value whose contents are raw[s:e], the node-th
// value of the open segment; the caller updates the segment's end.
func (w *scanBuilder) str(s, e int, escaped bool, node int) {
	v := w.v
	st := scanString{off: int32(s), size: int32(e - s), node: int32(node)}
	if escaped || !w.validUTF8 && !utf8.Valid(v.raw[s:e]) {
		start := len(v.buf)
		if w.validUTF8 {
			v.buf = jsonraw.UnescapeValid(v.buf, v.raw[s:e])
		} else {
			v.buf = jsonraw.Unescape(v.buf, v.raw[s:e])
		}
		st = scanString{off: int32(start), size: int32(len(v.buf) - start), node: st.node, in: inBuf}
	}
	v.strs = append(v.strs, st)
}

// firstBidOf returns the index in Input.Bids of seatbid[seat]'s first
// decoded bid, or -1. Seatbids are entered in order within one seatbid
// array, so the cursor only moves forward until the next array.
func (w *scanBuilder) firstBidOf(seat int) int {
	for w.cursor < len(w.bids) && w.bids[w.cursor].SeatIndex < seat {
		w.cursor++
	}
	if w.cursor < len(w.bids) && w.bids[w.cursor].SeatIndex == seat {
		return w.cursor
	}
	return -1
}

// bidAt returns the index in Input.Bids of the decoded bid at
// seatbid[seat].bid[j], or -1.
func (w *scanBuilder) bidAt(seat, first, j int) int {
	if first < 0 {
		return -1
	}
	k := first + j
	if k < len(w.bids) && w.bids[k].SeatIndex == seat && w.bids[k].BidIndex == j {
		return k
	}
	return -1
}
