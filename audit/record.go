package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/bidguard/bidguard/jsonraw"
	"hash"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Version is the record format version, the "v" of every record.
const Version = 1

// Kind is what a record is about.
type Kind string

// Record kinds. Producers hand in reject, shadow, config, quarantine and
// release records; the writer alone makes gap, recovered and segment
// records.
const (
	KindReject     Kind = "reject"     // a rejected bid, or a rejected response (seat, bid_id empty)
	KindShadow     Kind = "shadow"     // a would-be rejection: action shadow or a gate in mode warn
	KindConfig     Kind = "config"     // a config load: policy is the config version
	KindQuarantine Kind = "quarantine" // a seat quarantined
	KindRelease    Kind = "release"    // a seat released
	KindGap        Kind = "gap"        // reason "<n> records dropped": the queue was full
	KindRecovered  Kind = "recovered"  // reason "<n> bytes truncated": a torn tail removed at open
	KindSegment    Kind = "segment"    // first record of every segment; reason is the segment number
)

// producerKind reports whether producers may hand in records of kind k.
func producerKind(k Kind) bool {
	switch k {
	case KindReject, KindShadow, KindConfig, KindQuarantine, KindRelease:
		return true
	}
	return false
}

func knownKind(k Kind) bool {
	return producerKind(k) || k == KindGap || k == KindRecovered || k == KindSegment
}

// Field limits. Producers' strings are clipped to these many bytes (on a
// rune boundary) when a record is handed in, so a queued record is bounded.
const (
	MaxID      = 128 // req_id, seat, bid_id, crid, gate, each adomain entry
	MaxReason  = 512 // reason
	MaxPolicy  = 64  // policy
	MaxDomains = 8   // adomain entries kept
	// maxLine bounds one encoded line (escapes included); the verifier
	// refuses longer lines.
	maxLine = 64 << 10
)

// tsLayout is the fixed-width UTC timestamp of the "ts" field.
const tsLayout = "2006-01-02T15:04:05.000000000Z"

// Record is one audit record. Producers fill the content fields (Kind to
// Policy; TS is set at hand-in when zero); the writer sets V, Seq, Prev and
// MAC.
type Record struct {
	V       int
	Seq     uint64
	TS      time.Time
	Kind    Kind
	ReqID   string
	Seat    string
	BidID   string
	CRID    string
	ADomain []string
	// PriceMicros is the bid price in millionths of the response currency.
	PriceMicros int64
	Gate        string
	Reason      string
	NBR         int
	Loss        int
	// Policy is the config version that made the decision.
	Policy string
	Prev   [32]byte
	MAC    [32]byte
}

// macTag separates this format's MAC input from anything else hashed with
// the same key.
const macTag = "bidguard.audit.v1"

// appendMACInput appends the length-prefixed encoding the MAC covers: every
// field but mac, each string as a 4-byte big-endian length and its bytes,
// each integer as 8 big-endian bytes (two's complement), ts as its Unix
// seconds (8 bytes) and nanoseconds (4 bytes), adomain as a 4-byte count of
// strings, prev as its 32 bytes. Never a delimiter join: no two records share an
// encoding.
func appendMACInput(b []byte, r *Record) []byte {
	str := func(b []byte, s string) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		return append(b, s...)
	}
	u64 := binary.BigEndian.AppendUint64
	b = str(b, macTag)
	b = u64(b, uint64(r.V))
	b = u64(b, r.Seq)
	b = u64(b, uint64(r.TS.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(r.TS.Nanosecond()))
	b = str(b, string(r.Kind))
	b = str(b, r.ReqID)
	b = str(b, r.Seat)
	b = str(b, r.BidID)
	b = str(b, r.CRID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.ADomain)))
	for _, d := range r.ADomain {
		b = str(b, d)
	}
	b = u64(b, uint64(r.PriceMicros))
	b = str(b, r.Gate)
	b = str(b, r.Reason)
	b = u64(b, uint64(int64(r.NBR)))
	b = u64(b, uint64(int64(r.Loss)))
	b = str(b, r.Policy)
	return append(b, r.Prev[:]...)
}

// macer computes record MACs: HMAC-SHA256 with a key, plain SHA-256 without
// one. It is not safe for concurrent use (the writer and each verifier own
// one).
type macer struct {
	h   hash.Hash
	buf []byte
	out []byte
}

func newMacer(key []byte) *macer {
	if len(key) == 0 {
		return &macer{h: sha256.New()}
	}
	return &macer{h: hmac.New(sha256.New, key)}
}

// sum returns the MAC of r (r.MAC is ignored).
func (m *macer) sum(r *Record) (out [32]byte) {
	m.buf = appendMACInput(m.buf[:0], r)
	m.h.Reset()
	m.h.Write(m.buf)
	m.out = m.h.Sum(m.out[:0])
	copy(out[:], m.out)
	return out
}

// appendLine appends r's canonical JSON line, newline included: the fields
// in the order of docs/design.md "Audit log", no spaces, every field present, strings
// escaped only where JSON requires (and control characters as \u00XX), ts
// as tsLayout in UTC, prev and mac as lowercase hex. The strings must be
// valid UTF-8 (the writer makes them so).
func appendLine(b []byte, r *Record) []byte {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(r.V), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = r.TS.UTC().AppendFormat(b, tsLayout)
	b = append(b, `","kind":`...)
	b = jsonraw.AppendString(b, string(r.Kind))
	b = append(b, `,"req_id":`...)
	b = jsonraw.AppendString(b, r.ReqID)
	b = append(b, `,"seat":`...)
	b = jsonraw.AppendString(b, r.Seat)
	b = append(b, `,"bid_id":`...)
	b = jsonraw.AppendString(b, r.BidID)
	b = append(b, `,"crid":`...)
	b = jsonraw.AppendString(b, r.CRID)
	b = append(b, `,"adomain":[`...)
	for i, d := range r.ADomain {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonraw.AppendString(b, d)
	}
	b = append(b, `],"price_micros":`...)
	b = strconv.AppendInt(b, r.PriceMicros, 10)
	b = append(b, `,"gate":`...)
	b = jsonraw.AppendString(b, r.Gate)
	b = append(b, `,"reason":`...)
	b = jsonraw.AppendString(b, r.Reason)
	b = append(b, `,"nbr":`...)
	b = strconv.AppendInt(b, int64(r.NBR), 10)
	b = append(b, `,"loss":`...)
	b = strconv.AppendInt(b, int64(r.Loss), 10)
	b = append(b, `,"policy":`...)
	b = jsonraw.AppendString(b, r.Policy)
	b = append(b, `,"prev":"`...)
	b = hex.AppendEncode(b, r.Prev[:])
	b = append(b, `","mac":"`...)
	b = hex.AppendEncode(b, r.MAC[:])
	return append(b, "\"}\n"...)
}

var errNotCanonical = errors.New("record is not in canonical form")

// parseLine decodes one line (newline included) into r. It reads only the
// canonical form appendLine writes (fields in order, no spaces, the escapes
// appendString makes) and then checks that re-encoding r gives the line
// back, byte for byte: any byte that differs from what the writer would
// write is an error, even where JSON would read the same values. scratch
// is reused for the re-encoding and returned.
func parseLine(line []byte, r *Record, scratch []byte) ([]byte, error) {
	p := lineParser{b: line}
	*r = Record{}
	p.lit(`{"v":`)
	v := p.int()
	p.lit(`,"seq":`)
	r.Seq = p.uint()
	p.lit(`,"ts":`)
	ts := p.str()
	p.lit(`,"kind":`)
	r.Kind = Kind(p.str())
	p.lit(`,"req_id":`)
	r.ReqID = p.str()
	p.lit(`,"seat":`)
	r.Seat = p.str()
	p.lit(`,"bid_id":`)
	r.BidID = p.str()
	p.lit(`,"crid":`)
	r.CRID = p.str()
	p.lit(`,"adomain":[`)
	for p.err == nil && p.peek() != ']' {
		if len(r.ADomain) > 0 {
			p.lit(",")
		}
		r.ADomain = append(r.ADomain, p.str())
	}
	p.lit(`],"price_micros":`)
	r.PriceMicros = p.int()
	p.lit(`,"gate":`)
	r.Gate = p.str()
	p.lit(`,"reason":`)
	r.Reason = p.str()
	p.lit(`,"nbr":`)
	nbr := p.int()
	p.lit(`,"loss":`)
	loss := p.int()
	p.lit(`,"policy":`)
	r.Policy = p.str()
	p.lit(`,"prev":`)
	p.hash(&r.Prev)
	p.lit(`,"mac":`)
	p.hash(&r.MAC)
	p.lit("}\n")
	if p.err != nil {
		return scratch, fmt.Errorf("malformed record at byte %d: %w", p.i+1, p.err)
	}
	if p.i != len(line) {
		return scratch, fmt.Errorf("malformed record: %d bytes after the record", len(line)-p.i)
	}
	var err error
	if r.TS, err = time.Parse(tsLayout, ts); err != nil {
		return scratch, fmt.Errorf("malformed ts %q", ts)
	}
	r.V, r.NBR, r.Loss = int(v), int(nbr), int(loss)
	scratch = appendLine(scratch[:0], r)
	if !bytes.Equal(scratch, line) {
		return scratch, errNotCanonical
	}
	return scratch, nil
}

// lineParser reads the canonical record encoding. After the first error
// every method returns zero values.
type lineParser struct {
	b   []byte
	i   int
	err error
}

func (p *lineParser) fail(what string) {
	if p.err == nil {
		p.err = errors.New(what)
	}
}

func (p *lineParser) peek() byte {
	if p.err != nil || p.i >= len(p.b) {
		p.fail("unexpected end")
		return 0
	}
	return p.b[p.i]
}

func (p *lineParser) lit(s string) {
	if p.err != nil {
		return
	}
	if !bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		p.fail(fmt.Sprintf("want %q", s))
		return
	}
	p.i += len(s)
}

// uint reads a decimal without sign or leading zeros.
func (p *lineParser) uint() uint64 {
	if p.err != nil {
		return 0
	}
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	digits := p.b[start:p.i]
	if len(digits) == 0 || (len(digits) > 1 && digits[0] == '0') {
		p.fail("want a decimal number")
		return 0
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		p.fail("number out of range")
	}
	return n
}

// int reads a decimal with an optional minus sign (never "-0").
func (p *lineParser) int() int64 {
	if p.err != nil {
		return 0
	}
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	u := p.uint()
	switch {
	case p.err != nil:
		return 0
	case neg && u == 0:
		p.fail("-0")
	case !neg && u > math.MaxInt64, neg && u > 1<<63:
		p.fail("number out of range")
	case neg:
		return int64(-u)
	}
	return int64(u)
}

// str reads a string. Any escape JSON allows is read here; parseLine's
// re-encoding then refuses every spelling the writer would not have made.
func (p *lineParser) str() string {
	if p.err != nil {
		return ""
	}
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		p.fail(`want "\""`)
		return ""
	}
	end, escaped := jsonraw.StringEnd(p.b, p.i)
	if end < 0 {
		p.fail("unterminated string")
		return ""
	}
	body := p.b[p.i+1 : end-1]
	p.i = end
	if !escaped {
		return string(body)
	}
	return string(jsonraw.Unescape(nil, body))
}

// hash reads 64 lowercase hex digits in quotes.
func (p *lineParser) hash(dst *[32]byte) {
	p.lit(`"`)
	if p.err != nil {
		return
	}
	if len(p.b)-p.i < 2*len(dst)+1 || p.b[p.i+2*len(dst)] != '"' {
		p.fail("want 64 hex digits")
		return
	}
	if _, err := hex.Decode(dst[:], p.b[p.i:p.i+2*len(dst)]); err != nil {
		p.fail("want 64 hex digits")
		return
	}
	p.i += 2*len(dst) + 1
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
