package engine

import (
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/bidguard/bidguard/jsonraw"
)

// Bid is one decoded bid of seatbid[].bid[] with what the decoder recorded
// about it. It belongs to an Input and must not be retained after the
// evaluation returns.
type Bid struct {
	*openrtb2.Bid
	// SeatIndex and BidIndex locate the bid: seatbid[SeatIndex].bid[BidIndex].
	SeatIndex, BidIndex int
	// Seat is seatbid[SeatIndex].seat as sent.
	Seat string
	// HasPrice is false when the bid had no "price" key or a null price.
	HasPrice bool
	// BadUTF8 is true when the bid's raw bytes held invalid UTF-8.
	BadUTF8 bool
	// Raw is the bid object's bytes as the bidder sent them.
	Raw []byte
	// verbatim: Raw decodes, under any conforming JSON parser, to exactly
	// the decoded bid (the decoder's tracking found nothing against it, and
	// it is valid UTF-8), so the body may carry Raw as it is.
	verbatim bool
	// Memo is the one part of an Input a gate may write: a fact a gate read
	// from this bid, left for a later gate that needs the same reading (the
	// markup gates' reading of the adm). Zero for every decoded bid.
	Memo Memo
	// imp is ImpByID(ImpID) when impKnown: the engine looks it up once per
	// bid when a run begins and forgets it when the run ends (Input.ImpOf).
	imp      *openrtb2.Imp
	impKnown bool
}

// Memo is one fact about a bid: Value, valid for the reading Key names (the
// bytes read and everything else the fact depends on, as the gate that
// wrote it packs them). A gate compares Key before it uses Value; the zero
// Key names no reading.
type Memo struct {
	Key   [3]uint64
	Value uint64
}

// Input is the pair under judgement plus the evaluation context. It is
// request-scoped, owned by a pooled Eval, and must not be retained after the
// evaluation returns. Gates only read it, but for each bid's Memo.
type Input struct {
	Request  *openrtb2.BidRequest
	Response *openrtb2.BidResponse
	// Bids flattens seatbid[].bid[] in response order.
	Bids []Bid
	// RawRequest and RawResponse are the documents as received.
	RawRequest, RawResponse []byte
	// RegsDSA is the request's regs.dsa object as sent (nil when absent):
	// openrtb2.Regs has no field for it.
	RegsDSA []byte
	// ResponseEmpty is true when the response document was null or {}.
	ResponseEmpty bool

	// Arrival is when the exchange's request arrived; Deadline is D.
	Arrival, Deadline time.Time
	// LatencyMs is the bidder's response time; LatencyKnown says whether it is set.
	LatencyMs    float64
	LatencyKnown bool

	// Rates are the default policy's currency rates.
	Rates *Rates
	// Quarantine (the snapshot's seat states) and Upstream (the upstream
	// that answered; "" in check) are what the quarantine gate reads.
	Quarantine SeatStates
	Upstream   string

	frozen   bool
	frozenAt time.Time
	// clock is the engine's last reading of the real clock; clockBase is
	// the run's first, from which the later ones read only the monotonic
	// clock (time.Since: one clock_gettime instead of two).
	clock, clockBase time.Time
	// worked counts the units of judging done since the last reading
	// (bids judged or scanned, response gates run): see work.
	worked int
	// late: at the last reading the evaluation instant (Now) was at or
	// past the deadline. The gates' deadline checks read it instead of
	// comparing the clock with the deadline again.
	late bool

	// rawResponseUTF8: RawResponse is known to be valid UTF-8 (the
	// validating pass saw no invalid byte), so its readers need not check.
	rawResponseUTF8 bool
	// responseTokens are RawResponse's tokens as the validating pass found
	// them (nil: not recorded), so the scan table need not scan it again.
	responseTokens []jsonraw.Token
	// responseDecoded are the strings the decoder had to decode (escapes,
	// invalid UTF-8), by the Next of their tokens (index + 1).
	responseDecoded []string

	impIndex map[string]int
	bidIndex map[string]int
	// passedBy[i] == gateRun: the per-bid gate running now has passed
	// Bids[i] in this run, and no earlier gate had rejected it (see
	// Passed). gateRun numbers the per-bid gates' runs of this Input's
	// Eval (0: none running), so that a run's set starts empty without a
	// clear: what an earlier run wrote holds a smaller number. gateRuns is
	// the last number given; reset keeps it.
	passedBy          []uint32
	gateRun, gateRuns uint32
}

// Now is the evaluation clock: the frozen instant in `check`; otherwise,
// during a run, the engine's last reading (when the run began and after
// every clockEvery units of judging; per gate when gates are timed), and
// outside a run the real clock.
func (in *Input) Now() time.Time {
	if in.frozen {
		return in.frozenAt
	}
	if !in.clock.IsZero() {
		return in.clock
	}
	return clockNow()
}

// readClock reads the real clock (latencies are measured with it even in
// `check`) and makes it the run's current instant.
func (in *Input) readClock() time.Time {
	if in.clockBase.IsZero() {
		in.clockBase = clockNow()
		in.clock = in.clockBase
	} else {
		in.clock = in.clockBase.Add(clockSince(in.clockBase))
	}
	in.worked = 0
	in.late = !in.at(in.clock).Before(in.Deadline)
	return in.clock
}

// work counts n units of judging; once clockEvery units were done since the
// last reading it reads the clock and reports whether the deadline passed.
// It is inlined: the usual call adds and compares.
func (in *Input) work(n int) (expired bool) {
	in.worked += n
	return in.worked >= clockEvery && in.readLate()
}

// readLate reads the clock and reports whether the deadline passed.
func (in *Input) readLate() bool {
	in.readClock()
	return in.late
}

// resetClock starts or ends a run: Now reads the real clock until the
// run's first reading.
func (in *Input) resetClock() {
	in.clock, in.clockBase, in.worked, in.late = time.Time{}, time.Time{}, 0, false
}

// clockNow and clockSince read the real clock; tests count the reads
// through them.
var (
	clockNow   = time.Now
	clockSince = time.Since
)

// at is the evaluation instant for a reading of the real clock.
func (in *Input) at(real time.Time) time.Time {
	if in.frozen {
		return in.frozenAt
	}
	return real
}

// FreezeClock makes every clock read return t (the `check` command).
func (in *Input) FreezeClock(t time.Time) { in.frozen, in.frozenAt = true, t }

// impIndexThreshold is the imp count from which ImpByID uses a map.
const impIndexThreshold = 16

// ImpByID returns the first request imp with that id, or nil. An empty id
// matches no imp, even an imp without an id. It allocates nothing for
// requests of up to 16 imps; larger requests build a pooled index once per
// evaluation.
func (in *Input) ImpByID(id string) *openrtb2.Imp {
	if in.Request == nil || id == "" {
		return nil
	}
	imps := in.Request.Imp
	if len(imps) <= impIndexThreshold {
		for i := range imps {
			if imps[i].ID == id {
				return &imps[i]
			}
		}
		return nil
	}
	if len(in.impIndex) == 0 {
		if in.impIndex == nil {
			in.impIndex = make(map[string]int, len(imps))
		}
		for i := len(imps) - 1; i >= 0; i-- {
			in.impIndex[imps[i].ID] = i
		}
	}
	if i, ok := in.impIndex[id]; ok {
		return &imps[i]
	}
	return nil
}

// ImpOf returns the request imp of bid b, a bid of in.Bids:
// ImpByID(b.ImpID). During a run the engine has looked it up once for every
// bid, so that the gates that need it do not search the imps each.
func (in *Input) ImpOf(b *Bid) *openrtb2.Imp {
	if b.impKnown {
		return b.imp
	}
	return in.ImpByID(b.ImpID)
}

// findImps looks up every bid's imp for ImpOf (forget: clears them).
func (in *Input) findImps(forget bool) {
	for i := range in.Bids {
		b := &in.Bids[i]
		if forget {
			b.imp, b.impKnown = nil, false
			continue
		}
		b.imp, b.impKnown = in.ImpByID(b.ImpID), true
	}
}

// FirstBidWithID returns the index in Bids of the first bid whose id is id,
// or -1. It allocates nothing for responses of up to 16 bids; larger ones
// build a pooled index once per evaluation.
func (in *Input) FirstBidWithID(id string) int {
	if len(in.Bids) <= impIndexThreshold {
		for i := range in.Bids {
			if in.Bids[i].ID == id {
				return i
			}
		}
		return -1
	}
	if len(in.bidIndex) == 0 {
		if in.bidIndex == nil {
			in.bidIndex = make(map[string]int, len(in.Bids))
		}
		for i := len(in.Bids) - 1; i >= 0; i-- {
			in.bidIndex[in.Bids[i].ID] = i
		}
	}
	if i, ok := in.bidIndex[id]; ok {
		return i
	}
	return -1
}

// Passed reports whether the per-bid gate running now has already judged
// Bids[i] in this run of its policy, passed it, and found it standing: no
// earlier gate had rejected it (or would have, under action: shadow). A
// gate that judges a bid with the bids before it (podCompliance's pods)
// reads it for the bids it has kept so far; a bid the gate failed or
// skipped, of another policy, or not yet judged is not passed. Outside a
// gate's run (a test calling CheckBid itself) nothing is passed.
func (in *Input) Passed(i int) bool {
	return in.gateRun != 0 && i >= 0 && i < len(in.passedBy) && in.passedBy[i] == in.gateRun
}

// startGate starts a per-bid gate's run over n bids, its passed set empty;
// endGate ends it.
func (in *Input) startGate(n int) {
	if cap(in.passedBy) < n {
		in.passedBy = make([]uint32, n)
	}
	in.passedBy = in.passedBy[:n]
	in.gateRuns++
	if in.gateRuns == 0 {
		// Wrapped: the numbers of earlier runs would come again.
		clear(in.passedBy[:cap(in.passedBy)])
		in.gateRuns = 1
	}
	in.gateRun = in.gateRuns
}

// endGate ends the per-bid gate's run: nothing is passed.
func (in *Input) endGate() { in.gateRun = 0 }

// pass records that the running gate passed bid i, which is standing when
// no earlier gate rejected it (only a standing bid is passed).
func (in *Input) pass(i int32, standing bool) {
	if standing {
		in.passedBy[i] = in.gateRun
	}
}

// ResponseCur is the response currency, USD when absent.
func (in *Input) ResponseCur() string {
	if in.Response == nil || in.Response.Cur == "" {
		return "USD"
	}
	return in.Response.Cur
}

// reset empties in, keeping its storage. The Input is zeroed in place
// and the storage put back, which costs a clear of it: a composite literal
// assigned is built aside and then copied.
func (in *Input) reset() {
	if len(in.impIndex) > 0 {
		clear(in.impIndex)
	}
	if len(in.bidIndex) > 0 {
		clear(in.bidIndex)
	}
	im, bi := in.impIndex, in.bidIndex
	clear(in.Bids) // a pooled Eval keeps no pointer into released documents
	bids, passedBy, gateRuns := in.Bids[:0], in.passedBy[:0], in.gateRuns
	*in = Input{}
	in.Bids, in.impIndex, in.bidIndex, in.passedBy, in.gateRuns = bids, im, bi, passedBy, gateRuns
}
