package audit

import (
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// ring is the bounded queue between the bid path and the writer: a
// lock-free multi-producer, single-consumer ring of record slots (D. Vyukov's
// bounded queue with one consumer). A producer claims a position with one
// compare-and-swap, copies the record into the slot and publishes it; it
// never waits, and a full ring is reported at once. The writer reads
// published slots in order and frees them only after their lines were
// handed to write(2), so the records accepted and not yet written never
// exceed the capacity.
type ring struct {
	cells []cell
	n     uint64
	_     [64]byte // keep head off the cache line of the fields above
	head  atomic.Uint64
	_     [56]byte
	tail  uint64 // next position to read: the writer's alone
}

// cell is one slot. seq == pos means free for the producer of pos;
// seq == pos+1 means published for the reader of pos.
type cell struct {
	seq atomic.Uint64
	s   slot
}

// String fields of a slot, in the order of their bytes in slot.buf.
const (
	fReqID = iota
	fSeat
	fBidID
	fCRID
	fGate
	fReason
	fPolicy
	numFields
)

// keepBuf is the largest slot buffer kept for reuse: larger records
// allocate, so the memory a full ring retains stays bounded.
const keepBuf = 512

// maxSlotBytes is the most a slot holds: every string at its limit.
const maxSlotBytes = 5*MaxID + MaxReason + MaxPolicy + MaxDomains*MaxID

// slot is a record's content copied into storage the slot owns, so nothing
// of the producer's memory is retained.
type slot struct {
	kind      Kind
	ts        int64 // Unix nanoseconds
	price     int64
	nbr, loss int
	nDom      int
	ends      [numFields + MaxDomains]uint16 // end offsets in buf
	buf       []byte
}

func newRing(n int) *ring {
	r := &ring{cells: make([]cell, n), n: uint64(n)}
	for i := range r.cells {
		r.cells[i].seq.Store(uint64(i))
	}
	return r
}

// push copies rec into a free slot and publishes it, or reports false when
// the ring is full. Safe for concurrent use by any number of producers.
// It allocates only when a slot's buffer must grow.
func (q *ring) push(rec *Record, now int64) bool {
	pos := q.head.Load()
	for {
		c := &q.cells[pos%q.n]
		seq := c.seq.Load()
		switch d := int64(seq - pos); {
		case d == 0:
			if q.head.CompareAndSwap(pos, pos+1) {
				c.s.fill(rec, now)
				c.seq.Store(pos + 1)
				return true
			}
			pos = q.head.Load()
		case d < 0:
			return false
		default:
			pos = q.head.Load()
		}
	}
}

// peek returns the slot k places after the read position when it is
// published, else nil. The writer only.
func (q *ring) peek(k uint64) *slot {
	pos := q.tail + k
	c := &q.cells[pos%q.n]
	if c.seq.Load() != pos+1 {
		return nil
	}
	return &c.s
}

// release frees the first k slots after the read position. The writer only.
func (q *ring) release(k uint64) {
	for ; k > 0; k-- {
		c := &q.cells[q.tail%q.n]
		if cap(c.s.buf) > keepBuf {
			c.s.buf = nil
		}
		c.seq.Store(q.tail + q.n)
		q.tail++
	}
}

func (s *slot) fill(r *Record, now int64) {
	s.kind, s.price, s.nbr, s.loss = r.Kind, r.PriceMicros, r.NBR, r.Loss
	s.ts = now
	if !r.TS.IsZero() {
		s.ts = r.TS.UnixNano()
	}
	s.nDom = min(len(r.ADomain), MaxDomains)
	n := len(r.ReqID) + len(r.Seat) + len(r.BidID) + len(r.CRID) + len(r.Gate) + len(r.Reason) + len(r.Policy)
	for i := range s.nDom {
		n += len(r.ADomain[i])
	}
	if n > cap(s.buf) {
		s.buf = make([]byte, 0, max(min(n, maxSlotBytes), keepBuf/2)) // one allocation for a cold slot
	}
	b := s.buf[:0]
	put := func(i int, v string, max int) {
		b = append(b, clip(v, max)...)
		s.ends[i] = uint16(len(b))
	}
	put(fReqID, r.ReqID, MaxID)
	put(fSeat, r.Seat, MaxID)
	put(fBidID, r.BidID, MaxID)
	put(fCRID, r.CRID, MaxID)
	put(fGate, r.Gate, MaxID)
	put(fReason, r.Reason, MaxReason)
	put(fPolicy, r.Policy, MaxPolicy)
	for i := range s.nDom {
		put(numFields+i, r.ADomain[i], MaxID)
	}
	s.buf = b
}

// record fills r from the slot. The strings alias the slot's buffer: r is
// valid only until the slot is released, and the writer encodes it before
// that. doms is reused for r.ADomain.
func (s *slot) record(r *Record, doms []string) []string {
	str := func(i int) string {
		start := 0
		if i > 0 {
			start = int(s.ends[i-1])
		}
		b := s.buf[start:s.ends[i]]
		if len(b) == 0 {
			return ""
		}
		return unsafe.String(&b[0], len(b))
	}
	doms = doms[:0]
	for i := range s.nDom {
		doms = append(doms, str(numFields+i))
	}
	*r = Record{TS: time.Unix(0, s.ts).UTC(), Kind: s.kind, ReqID: str(fReqID), Seat: str(fSeat), BidID: str(fBidID),
		CRID: str(fCRID), ADomain: doms, PriceMicros: s.price, Gate: str(fGate), Reason: str(fReason),
		NBR: s.nbr, Loss: s.loss, Policy: str(fPolicy)}
	return doms
}

// copyRecord is a control record's copy: clipped like a slot, owning its
// strings.
func copyRecord(r *Record, now time.Time) Record {
	c := Record{TS: r.TS, Kind: r.Kind, ReqID: strings.Clone(clip(r.ReqID, MaxID)), Seat: strings.Clone(clip(r.Seat, MaxID)),
		BidID: strings.Clone(clip(r.BidID, MaxID)), CRID: strings.Clone(clip(r.CRID, MaxID)), PriceMicros: r.PriceMicros,
		Gate: strings.Clone(clip(r.Gate, MaxID)), Reason: strings.Clone(clip(r.Reason, MaxReason)), NBR: r.NBR, Loss: r.Loss,
		Policy: strings.Clone(clip(r.Policy, MaxPolicy))}
	if c.TS.IsZero() {
		c.TS = now
	}
	for i := range min(len(r.ADomain), MaxDomains) {
		c.ADomain = append(c.ADomain, strings.Clone(clip(r.ADomain[i], MaxID)))
	}
	return c
}

// validUTF8 makes r's strings valid UTF-8 (invalid bytes become U+FFFD),
// so the line written decodes to exactly the values the MAC covers.
func validUTF8(r *Record) {
	for _, p := range [...]*string{&r.ReqID, &r.Seat, &r.BidID, &r.CRID, &r.Gate, &r.Reason, &r.Policy} {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
	}
	for i, d := range r.ADomain {
		if !utf8.ValidString(d) {
			r.ADomain[i] = strings.ToValidUTF8(d, "\uFFFD")
		}
	}
}
