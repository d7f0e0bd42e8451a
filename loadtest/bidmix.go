package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// dsaMode is what a bid carries in ext.dsa.
type dsaMode uint8

const (
	dsaAuto    dsaMode = iota // a valid ext.dsa when the request requires one, else none
	dsaNone                   // none
	dsaTooLong                // behalf over 100 characters
)

// respSpec is the response-level part of an answer.
type respSpec struct {
	wrongID bool   // id differs from the request's
	cur     string // the response cur
}

// plan is the random part of an answer, drawn before it is built: which
// imps get bids, how many, from which seats, and which bids are bad. Its
// slices are reused from request to request.
type plan struct {
	late  bool
	resp  *kind    // a response-level kind, or nil
	slots []slot   // one per bid, in the order the bids are numbered
	elig  []elig   // the imps the bidder can bid on, in request order
	cats  []string // valid bids' categories (validCats)
	badv  []string // the request's badv, normalised
	// The seats: seatCount consecutive seats of a pool of poolSize from
	// seatStart (0-based, wrapping); bid j goes to seat j mod seatCount.
	seatStart, seatCount, poolSize int
}

// slot is one bid of a plan: the imp it is for and its bad kind (nil: a
// valid bid).
type slot struct {
	imp  int // index into reqInfo.imps
	elig int // index into plan.elig
	kind *kind
}

// elig is an imp the bidder can bid on, with what a valid bid for it
// carries beyond the imp's own fields.
type elig struct {
	imp int
	av  avAnswer // video and audio imps
	// Valid bids that can play in one ad break never share a category (as
	// long as a pod needs no more than plan.cats holds): an imp's valid
	// bids take plan.cats from catBase on (mod its length), the k-th valid
	// bid kept in a dynamic pod the k-th of its catSlots (capped at
	// len(safeCats)); the other imps' bids are alternatives for one slot
	// and share one. The imps of a pod (one podid) take consecutive ranges.
	catBase, catSlots int
}

// bidShape is how many bids an answer holds and from how many seats: the
// -bids, -seats and -seats-per-response flags.
type bidShape struct {
	bids         countDist // zero value: one bid per imp the bidder can bid on
	seats        int       // the seat pool: seat-00001 .. seat-<seats>
	seatsPerResp countDist // zero value: every seat, as many as there are bids
}

// layout fills p for request r: the imps the bidder can bid on, the bids
// spread over them in turn, and the seats. Late, resp and kinds are left
// to the caller (mix.draw).
func (sh *bidShape) layout(r *reqInfo, p *plan, rng *rand.Rand) {
	p.resp = nil
	p.slots, p.elig = p.slots[:0], p.elig[:0]
	p.cats = validCats(r, p.cats[:0])
	p.badv = p.badv[:0]
	for _, d := range r.badv {
		p.badv = append(p.badv, normDomain(d))
	}
	cur := respCur(r)
	for i := range r.imps {
		imp := &r.imps[i]
		if !eligible(imp, cur) {
			continue
		}
		e := elig{imp: i, catBase: i}
		if mt := imp.media(); mt == mtVideo || mt == mtAudio {
			a, ok := answerAV(imp)
			if !ok {
				continue
			}
			e.av = a
		}
		e.catSlots = 1
		if imp.av.dynamic() {
			e.catSlots = min(e.av.capacity(imp), len(safeCats))
		}
		if len(imp.av.podID) > 0 {
			// After the categories of the pod's earlier imps.
			e.catBase = 0
			for k := len(p.elig) - 1; k >= 0; k-- {
				if prev := &p.elig[k]; string(r.imps[prev.imp].av.podID) == string(imp.av.podID) {
					e.catBase = prev.catBase + prev.catSlots
					break
				}
			}
		}
		p.elig = append(p.elig, e)
	}
	n := 0
	if len(p.elig) > 0 {
		n = sh.bids.draw(rng, len(p.elig))
	}
	for j := range n {
		e := j % len(p.elig)
		p.slots = append(p.slots, slot{imp: p.elig[e].imp, elig: e})
	}
	p.poolSize = max(sh.seats, 1)
	p.seatCount = min(max(sh.seatsPerResp.draw(rng, p.poolSize), 1), p.poolSize, max(n, 1))
	p.seatStart = rng.IntN(p.poolSize)
}

// mix is the fake bidder's bad-bid mix.
type mix struct {
	bad       float64 // share of bad bids
	bidKinds  []*kind
	respKinds []*kind
}

func newMix(bad float64, selected []*kind) *mix {
	m := &mix{bad: bad}
	for _, k := range selected {
		if k.response {
			m.respKinds = append(m.respKinds, k)
		} else {
			m.bidKinds = append(m.bidKinds, k)
		}
	}
	return m
}

// draw sets the bad kinds of p's slots (laid out for request r): each
// kind gets about bad/len(kinds) of the bids. A kind drawn for an imp (or
// a request) it does not apply to is reported to fallback and that bid is
// sent valid; so is dup-id on the first bid. An answer then holds exactly
// the plan's bids, except on dynamic pods (build.go: valid bids a full
// pod has no room for are left out, pod kinds add the valid bids they need
// before their bad one).
func (m *mix) draw(r *reqInfo, p *plan, rng *rand.Rand, fallback func(*kind)) {
	p.resp = nil
	for j := range p.slots {
		p.slots[j].kind = nil
	}
	if p.late || m.bad <= 0 || len(p.slots) == 0 {
		return
	}
	n := len(m.bidKinds) + len(m.respKinds)
	if len(m.respKinds) > 0 && rng.Float64() < m.bad*float64(len(m.respKinds))/float64(n) {
		k := m.respKinds[rng.IntN(len(m.respKinds))]
		if k.applies(r, nil) {
			p.resp = k
			return
		}
		fallback(k)
	}
	if len(m.bidKinds) == 0 {
		return
	}
	for j := range p.slots {
		if rng.Float64() >= m.bad {
			continue
		}
		k := m.bidKinds[rng.IntN(len(m.bidKinds))]
		if j == 0 && k.name == "dup-id" {
			// The first bid has no earlier id to copy: a duplicate there
			// would be one bid more than the plan's count.
			fallback(k)
			continue
		}
		if imp := &r.imps[p.slots[j].imp]; k.applies(r, imp) {
			p.slots[j].kind = k
		} else {
			fallback(k)
		}
	}
}

// Fixed parts of every bid.
const (
	winHost         = "https://win.loadtest-dsp.com/win?id="
	insecureWinHost = "http://win.loadtest-dsp.com/win?id="
	billHost        = "https://bill.loadtest-dsp.com/b?id="
	pxHost          = "https://imp.loadtest-dsp.com/px?id="
	priceMac        = "&p=${AUCTION_PRICE}"
)

// safeCats are the categories of valid bids (Content Taxonomy 1.0 tiers
// 1 none of whose children is child-unsafe), those bcat does not block
// used in turn, so bids that can share an ad break differ.
var safeCats = []string{"IAB19", "IAB3", "IAB12", "IAB2", "IAB5", "IAB1", "IAB4", "IAB6", "IAB10", "IAB11",
	"IAB13", "IAB15", "IAB16", "IAB17", "IAB18", "IAB20", "IAB21", "IAB22", "IAB23", "IAB24"}

// validCats appends the categories valid bids may carry for r: none when
// its bcat is in another taxonomy than Content 1.0.
func validCats(r *reqInfo, dst []string) []string {
	if r.cattax != 0 && r.cattax != 1 {
		return dst
	}
	for _, c := range safeCats {
		if !catBlocked(r, c) {
			dst = append(dst, c)
		}
	}
	return dst
}

// priceJump multiplies the valid bids' prices of one seat by factor from at
// on (-jump): a seat whose pricing config broke, for the anomaly detector.
// The result stays a valid price (at most maxValidMultiple × the floor).
type priceJump struct {
	seat   int // 1-based: seat-N
	factor float64
	at     time.Time
}

// parseJump reads -jump SEAT:FACTOR@AFTER (seat-2:10@5m or
// seat-00002:10@5m); AFTER counts from start.
func parseJump(v string, start time.Time) (*priceJump, error) {
	if v == "" {
		return nil, nil
	}
	bad := fmt.Errorf("-jump %q: want seat-N:FACTOR@AFTER, e.g. seat-1:10@5m", v)
	seat, rest, ok := strings.Cut(v, ":")
	fs, after, ok2 := strings.Cut(rest, "@")
	n, ok3 := parseSeatName(seat)
	if !ok || !ok2 || !ok3 {
		return nil, bad
	}
	f, err := strconv.ParseFloat(fs, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return nil, bad
	}
	d, err := time.ParseDuration(after)
	if err != nil || d < 0 {
		return nil, bad
	}
	return &priceJump{seat: n, factor: f, at: start.Add(d)}, nil
}

// apply changes s, a valid bid of seat (1-based), once the jump is due.
func (j *priceJump) apply(seat int, s *bidSpec) {
	if j != nil && seat == j.seat && !time.Now().Before(j.at) {
		s.price = math.Round(s.price*j.factor*1e6) / 1e6
	}
}

// respCur is the currency valid answers use: the request's first, else USD.
func respCur(r *reqInfo) string {
	if len(r.cur) > 0 {
		return strings.ToUpper(string(trimSpace(r.cur[0])))
	}
	return "USD"
}

// eligible reports whether the bidder can make a valid bid for imp: a
// media type it knows, no private auction (it has no deals), and a floor
// (and per-second floor) in the answer's currency.
func eligible(imp *impInfo, cur string) bool {
	if imp.private || imp.media() == 0 {
		return false
	}
	if imp.floor <= 0 && imp.av.perSec <= 0 {
		return true
	}
	fc := trimSpace(imp.floorCur)
	if len(fc) == 0 {
		return cur == "USD"
	}
	if len(fc) != len(cur) {
		return false
	}
	for i, c := range fc {
		if c|0x20 != cur[i]|0x20 {
			return false
		}
	}
	return true
}

// domainBlockedBytes reports whether badvCompliance blocks d: an entry
// of badv (normalised by normDomain) equal to it or a parent of it.
func domainBlockedBytes(d []byte, badv []string) bool {
	for _, e := range badv {
		if e == "" || len(d) < len(e) || string(d[len(d)-len(e):]) != e {
			continue
		}
		if len(d) == len(e) || d[len(d)-len(e)-1] == '.' {
			return true
		}
	}
	return false
}

// appendDomain appends the advertiser domain of valid bid brand n: the
// first of brand-N.com, brand-N.net and shop-N.org that badv does not
// block; ok false when it blocks all three.
func appendDomain(dst []byte, n int, badv []string) ([]byte, bool) {
	start := len(dst)
	for _, f := range [...][2]string{{"brand-", ".com"}, {"brand-", ".net"}, {"shop-", ".org"}} {
		dst = append(dst[:start], f[0]...)
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, f[1]...)
		if !domainBlockedBytes(dst[start:], badv) {
			return dst, true
		}
	}
	return dst[:start], false
}
