package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
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

// bidSpec is one bid before it is written.
type bidSpec struct {
	tag                             string // ok, late or bad-<kind>
	id                              string // tag-serial
	noID, noCrid, noMarkup          bool
	noPrice, dupOf                  bool // dupOf: id copied from the bid before it
	insecure, privateNurl, redirect bool
	impid                           []byte
	price                           float64
	dealid, adomain, bundle, cat    string
	cattax, attr, w, h, mtype       int
	media, brand                    int
	dsa                             dsaMode
}

// plan is the random part of an answer, drawn before it is built.
type plan struct {
	late bool
	resp *kind   // a response-level kind, or nil
	bids []*kind // per imp: the bid-level kind, nil for a valid bid
}

// mix is the fake bidder's bid mix.
type mix struct {
	bad       float64 // share of bad bids
	bidKinds  []*kind
	respKinds []*kind
	seats     int
}

func newMix(bad float64, selected []*kind, seats int) *mix {
	m := &mix{bad: bad, seats: seats}
	for _, k := range selected {
		if k.response {
			m.respKinds = append(m.respKinds, k)
		} else {
			m.bidKinds = append(m.bidKinds, k)
		}
	}
	return m
}

// draw fills p for request r: each kind gets about bad/len(kinds) of the
// bids. A kind drawn for an imp (or a request) it does not apply to is
// reported to fallback and that bid is sent valid.
func (m *mix) draw(r *reqInfo, p *plan, fallback func(*kind)) {
	p.resp = nil
	p.bids = p.bids[:0]
	for range r.imps {
		p.bids = append(p.bids, nil)
	}
	if p.late || m.bad <= 0 {
		return
	}
	n := len(m.bidKinds) + len(m.respKinds)
	if len(m.respKinds) > 0 && rand.Float64() < m.bad*float64(len(m.respKinds))/float64(n) {
		k := m.respKinds[rand.IntN(len(m.respKinds))]
		if k.applies(r, nil) {
			p.resp = k
			return
		}
		fallback(k)
	}
	if len(m.bidKinds) == 0 {
		return
	}
	for i := range r.imps {
		if rand.Float64() >= m.bad {
			continue
		}
		k := m.bidKinds[rand.IntN(len(m.bidKinds))]
		if k.applies(r, &r.imps[i]) {
			p.bids[i] = k
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

// safeCats are categories for valid bids, tried in order: none is
// child-unsafe; the first that bcat does not block is used.
var safeCats = []string{"IAB19", "IAB3", "IAB12", "IAB2", "IAB5"}

// builder writes answers. Its scratch buffer makes it single-goroutine:
// one per request (pooled by the bidder).
type builder struct {
	serial *atomic.Uint64 // shared bid serial numbers
	jump   *priceJump     // nil: prices never jump
	adm    []byte
}

// priceJump multiplies the valid bids' prices of one seat by factor from at
// on (-jump): a seat whose pricing config broke, for the anomaly detector.
type priceJump struct {
	seat   int // 1-based: seat-N
	factor float64
	at     time.Time
}

// parseJump reads -jump SEAT:FACTOR@AFTER (seat-2:10@5m); AFTER counts
// from start.
func parseJump(v string, start time.Time) (*priceJump, error) {
	if v == "" {
		return nil, nil
	}
	bad := fmt.Errorf("-jump %q: want seat-N:FACTOR@AFTER, e.g. seat-1:10@5m", v)
	seat, rest, ok := strings.Cut(v, ":")
	fs, after, ok2 := strings.Cut(rest, "@")
	if !ok || !ok2 || !strings.HasPrefix(seat, "seat-") {
		return nil, bad
	}
	n, err := strconv.Atoi(strings.TrimPrefix(seat, "seat-"))
	if err != nil || n < 1 {
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

// eligible reports whether the bidder can make a valid bid for imp, and
// with which advertiser domain: a media type it knows, no private auction
// (it has no deals), a floor in the answer's currency, and a domain badv
// does not block.
func eligible(r *reqInfo, imp *impInfo, i int, cur string) (string, bool) {
	if imp.private || imp.media() == 0 {
		return "", false
	}
	fc := string(trimSpace(imp.floorCur))
	if fc == "" {
		fc = "USD"
	}
	if imp.floor > 0 && !strings.EqualFold(fc, cur) {
		return "", false
	}
	n := strconv.Itoa(i + 1)
	for _, d := range []string{"brand-" + n + ".com", "brand-" + n + ".net", "shop-" + n + ".org"} {
		if !domainBlocked(d, r.badv) {
			return d, true
		}
	}
	return "", false
}

// validBid returns the spec of a valid bid for imp i.
func (b *builder) validBid(r *reqInfo, i int, domain string) bidSpec {
	imp := &r.imps[i]
	s := bidSpec{tag: tagOK, impid: imp.id, adomain: domain, media: imp.media(), brand: i + 1, price: 1}
	s.mtype = s.media
	if imp.floor > 0 {
		s.price = math.Round(imp.floor*1.5*1e6) / 1e6 // whole micros: 1.2, not 1.2000000000000002
	}
	if r.cattax == 0 || r.cattax == 1 {
		for _, c := range safeCats {
			if !catBlocked(r, c) {
				s.cat = c
				break
			}
		}
	}
	if !containsInt(imp.battr[s.media], 4) {
		s.attr = 4
	}
	switch s.media {
	case mtBanner:
		s.w, s.h = imp.bw, imp.bh
	case mtVideo:
		s.w, s.h = imp.vw, imp.vh
	}
	return s
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// build appends the answer to r under plan p to dst and calls sent with the
// tag of each bid written. It returns dst unchanged when there is no bid to
// make (the bidder answers 204).
func (b *builder) build(dst []byte, r *reqInfo, p *plan, seats int, sent func(tag string)) []byte {
	rs := respSpec{cur: respCur(r)}
	if p.resp != nil {
		p.resp.applyResp(r, &rs)
	}
	start := len(dst)
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, r.id)
	if rs.wrongID {
		dst = dst[:len(dst)-1]
		dst = append(dst, `-loadtest-other"`...)
	}
	dst = append(dst, `,"bidid":"resp-`...)
	dst = strconv.AppendUint(dst, b.serial.Add(1), 10)
	dst = append(dst, `","cur":`...)
	dst = appendJSONString(dst, []byte(rs.cur))
	dst = append(dst, `,"seatbid":[`...)
	nbids, nseats := 0, 0
	for seat := range max(seats, 1) {
		first := true
		for i := seat; i < len(r.imps); i += max(seats, 1) {
			domain, ok := eligible(r, &r.imps[i], i, respCur(r))
			if !ok {
				continue
			}
			if first {
				if nseats > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"seat":"seat-`...)
				dst = strconv.AppendInt(dst, int64(seat+1), 10)
				dst = append(dst, `","bid":[`...)
				first = false
				nseats++
			} else {
				dst = append(dst, ',')
			}
			s := b.validBid(r, i, domain)
			b.jump.apply(seat+1, &s)
			switch k := p.bids[i]; {
			case p.late:
				s.tag = tagLate
			case p.resp != nil:
				s.tag = tagBad + p.resp.name
			case k != nil && k.name == "dup-id":
				dst = b.appendBid(dst, r, &s, sent)
				dst = append(dst, ',')
				nbids++
				s.tag, s.dupOf = tagBad+k.name, true
			case k != nil:
				s.tag = tagBad + k.name
				k.apply(r, &r.imps[i], &s)
			}
			dst = b.appendBid(dst, r, &s, sent)
			nbids++
		}
		if !first {
			dst = append(dst, "]}"...)
		}
	}
	if nbids == 0 {
		return dst[:start]
	}
	return append(dst, "]}"...)
}

// appendBid writes one bid. A dupOf bid reuses s.id of the bid written
// before it with the same spec.
func (b *builder) appendBid(dst []byte, r *reqInfo, s *bidSpec, sent func(string)) []byte {
	adid := s.tag + "-" + strconv.FormatUint(b.serial.Add(1), 10)
	if !s.dupOf {
		s.id = adid
	}
	dst = append(dst, '{')
	if !s.noID {
		dst = append(dst, `"id":"`...)
		dst = append(dst, s.id...)
		dst = append(dst, `",`...)
	}
	if s.impid != nil {
		dst = append(dst, `"impid":`...)
		dst = appendJSONString(dst, s.impid)
		dst = append(dst, ',')
	}
	if !s.noPrice {
		dst = append(dst, `"price":`...)
		dst = strconv.AppendFloat(dst, s.price, 'f', -1, 64)
		dst = append(dst, ',')
	}
	dst = append(dst, `"adid":"`...)
	dst = append(dst, adid...)
	dst = append(dst, '"')
	brand := strconv.Itoa(s.brand)
	if !s.noCrid {
		dst = append(dst, `,"crid":"cr-`...)
		dst = append(dst, brand...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"cid":"camp-`...)
	dst = append(dst, brand...)
	dst = append(dst, '"')
	if s.adomain != "" {
		dst = append(dst, `,"adomain":[`...)
		dst = appendJSONString(dst, []byte(s.adomain))
		dst = append(dst, ']')
	}
	if s.bundle != "" {
		dst = append(dst, `,"bundle":`...)
		dst = appendJSONString(dst, []byte(s.bundle))
	}
	if s.cat != "" {
		dst = append(dst, `,"cat":[`...)
		dst = appendJSONString(dst, []byte(s.cat))
		dst = append(dst, ']')
		if s.cattax > 1 {
			dst = append(dst, `,"cattax":`...)
			dst = strconv.AppendInt(dst, int64(s.cattax), 10)
		}
	}
	if s.attr != 0 {
		dst = append(dst, `,"attr":[`...)
		dst = strconv.AppendInt(dst, int64(s.attr), 10)
		dst = append(dst, ']')
	}
	if s.dealid != "" {
		dst = append(dst, `,"dealid":`...)
		dst = appendJSONString(dst, []byte(s.dealid))
	}
	if s.w > 0 && s.h > 0 {
		dst = append(dst, `,"w":`...)
		dst = strconv.AppendInt(dst, int64(s.w), 10)
		dst = append(dst, `,"h":`...)
		dst = strconv.AppendInt(dst, int64(s.h), 10)
	}
	dst = append(dst, `,"mtype":`...)
	dst = strconv.AppendInt(dst, int64(s.mtype), 10)
	if !s.noMarkup {
		dst = append(dst, `,"nurl":"`...)
		switch {
		case s.insecure:
			dst = append(dst, insecureWinHost...)
		case s.privateNurl:
			dst = append(dst, "https://10.1.2.3/win?id="...)
		default:
			dst = append(dst, winHost...)
		}
		dst = append(dst, adid...)
		dst = append(dst, priceMac+`"`...)
	}
	dst = append(dst, `,"burl":"`+billHost...)
	dst = append(dst, adid...)
	dst = append(dst, priceMac+`"`...)
	if !s.noMarkup {
		b.adm = appendAdm(b.adm[:0], s, adid, brand)
		dst = append(dst, `,"adm":`...)
		dst = appendJSONString(dst, b.adm)
	}
	if s.dsa == dsaTooLong || (s.dsa == dsaAuto && r.dsa) {
		behalf := "Brand " + brand
		if s.dsa == dsaTooLong {
			behalf = strings.Repeat("Brand "+brand+" ", 20)
		}
		dst = append(dst, `,"ext":{"dsa":{"behalf":`...)
		dst = appendJSONString(dst, []byte(behalf))
		dst = append(dst, `,"paid":"Brand `...)
		dst = append(dst, brand...)
		dst = append(dst, `"}}`...)
	}
	sent(s.tag)
	return append(dst, '}')
}

// appendAdm writes the markup of a bid: HTML for a banner, VAST for video
// and audio, a native 1.2 response for native; every URL https, in the
// shapes of gates/testdata/typical-response.json.
func appendAdm(dst []byte, s *bidSpec, adid, brand string) []byte {
	switch s.media {
	case mtVideo, mtAudio:
		mime, ext := "video/mp4", "mp4"
		if s.media == mtAudio {
			mime, ext = "audio/mpeg", "mp3"
		}
		dst = cat(dst, `<VAST version="4.0"><Ad id="`, adid, `"><InLine><AdSystem>Loadtest DSP</AdSystem><AdTitle>Brand `, brand,
			`</AdTitle><Impression><![CDATA[`, pxHost, adid, `]]></Impression><Creatives><Creative><Linear><Duration>00:00:15</Duration>`,
			`<MediaFiles><MediaFile delivery="progressive" type="`, mime, `" width="640" height="480"><![CDATA[https://cdn.brand-`, brand,
			`.com/v/15s.`, ext, `]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`)
	case mtNative:
		dst = cat(dst, `{"native":{"ver":"1.2","assets":[{"id":1,"title":{"text":"Brand `, brand, `: new arrivals"}},`,
			`{"id":2,"img":{"url":"https://cdn.brand-`, brand, `.com/img/1200x627.jpg","w":1200,"h":627}}],`,
			`"link":{"url":"https://shop.brand-`, brand, `.com/?src=`, adid, `"},"imptrackers":["`, pxHost, adid, `"]}}`)
	default:
		w, h := strconv.Itoa(max(s.w, 1)), strconv.Itoa(max(s.h, 1))
		dst = cat(dst, `<div class="ad"><a href="https://click.brand-`, brand, `.com/c?id=`, adid,
			`"><img src="https://cdn.brand-`, brand, `.com/creative/`, w, `x`, h, `.png" width="`, w, `" height="`, h,
			`" alt="Brand `, brand, ` summer sale"></a><img src="`, pxHost, adid, `" width="1" height="1" style="display:none"></div>`)
	}
	if s.redirect {
		dst = cat(dst, `<script>top.location="https://landing.brand-`, brand, `.com/"</script>`)
	}
	return dst
}

// cat appends parts to dst.
func cat(dst []byte, parts ...string) []byte {
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

// appendJSONString writes s as a JSON string: quotes, backslashes and
// control characters escaped, everything else (HTML included) as is.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
