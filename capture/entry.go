package capture

import (
	"strconv"
	"sync"
	"time"

	"github.com/bidguard/bidguard/jsonraw"
)

// Entry is one sampled auction on its way to the writer. Get it from
// Writer.Acquire, fill it, and hand it to Writer.Submit, which takes it
// whether it queues it or not: the Entry and its slices must not be used or
// retained after Submit. Filling an Entry from the pool allocates only
// while its buffers grow to the sizes of the traffic.
type Entry struct {
	// Arrival is when the exchange's request arrived.
	Arrival time.Time
	// Upstream is the upstream that answered.
	Upstream string
	// LatencyMs is the bidder's response time.
	LatencyMs float64
	// Request and Response are copies of the documents as received: fill
	// them with append(e.Request[:0], raw...).
	Request, Response []byte

	verdict []byte // the summary's JSON, built by SetOutcome and AddBid
	nBids   int
}

// Judged is one verdict of a summary: on a bid (ID and Seat set) or on the
// response. Gate and Reason are set when Status is not "passed" because of
// a rejection (enforced or would-be).
type Judged struct {
	ID     string `json:"id,omitempty"`
	Seat   string `json:"seat,omitempty"`
	Status string `json:"status"`
	Gate   string `json:"gate,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Summary is the verdict summary of a record: the version of the config
// that judged the auction, serve's action, the bids it kept, its verdict on
// the response, one per decoded bid in response order.
type Summary struct {
	Config   string   `json:"config"`
	Action   string   `json:"action"`
	Kept     int      `json:"kept"`
	Response Judged   `json:"response"`
	Bids     []Judged `json:"bids"`
}

// SetOutcome starts the summary: the config version, the engine's action,
// the bids kept, the verdict on the response. AddBid adds the bids after it.
func (e *Entry) SetOutcome(config, action string, kept int, response Judged) {
	b := append(e.verdict[:0], `{"config":`...)
	b = jsonraw.AppendString(b, config)
	b = append(b, `,"action":`...)
	b = jsonraw.AppendString(b, action)
	b = append(b, `,"kept":`...)
	b = strconv.AppendInt(b, int64(kept), 10)
	b = append(b, `,"response":`...)
	b = appendJudged(b, &response)
	e.verdict = append(b, `,"bids":[`...)
	e.nBids = 0
}

// AddBid adds the verdict on the next bid.
func (e *Entry) AddBid(j Judged) {
	if e.nBids > 0 {
		e.verdict = append(e.verdict, ',')
	}
	e.verdict = appendJudged(e.verdict, &j)
	e.nBids++
}

func appendJudged(b []byte, j *Judged) []byte {
	b = append(b, '{')
	if j.ID != "" {
		b = jsonraw.AppendString(append(b, `"id":`...), j.ID)
		b = append(b, ',')
	}
	if j.Seat != "" {
		b = jsonraw.AppendString(append(b, `"seat":`...), j.Seat)
		b = append(b, ',')
	}
	b = jsonraw.AppendString(append(b, `"status":`...), j.Status)
	if j.Gate != "" {
		b = jsonraw.AppendString(append(b, `,"gate":`...), j.Gate)
	}
	if j.Reason != "" {
		b = jsonraw.AppendString(append(b, `,"reason":`...), j.Reason)
	}
	return append(b, '}')
}

// finish closes the summary (an empty one when SetOutcome was not called).
func (e *Entry) finish() {
	if len(e.verdict) == 0 {
		e.SetOutcome("", "", 0, Judged{Status: "passed"})
	}
	e.verdict = append(e.verdict, "]}"...)
}

// size is what the entry holds, for the queue's byte bound.
func (e *Entry) size() int64 { return int64(len(e.Request) + len(e.Response) + len(e.verdict) + 128) }

// keepEntryBytes is the most buffer capacity an Entry keeps in the pool.
const keepEntryBytes = 1 << 20

var entries = sync.Pool{New: func() any { return new(Entry) }}

func acquireEntry() *Entry { return entries.Get().(*Entry) }

func releaseEntry(e *Entry) {
	if cap(e.Request)+cap(e.Response)+cap(e.verdict) > keepEntryBytes {
		*e = Entry{}
	} else {
		*e = Entry{Request: e.Request[:0], Response: e.Response[:0], verdict: e.verdict[:0]}
	}
	entries.Put(e)
}
