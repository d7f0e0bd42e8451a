package main

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
)

// bidSpec is one bid before it is written.
type bidSpec struct {
	tag                             string // ok, late or bad-<kind>
	serial                          uint64 // the n of its adid
	noID, noCrid, noMarkup          bool
	noPrice, dupOf                  bool // dupOf: id copied from the last bid written with one
	insecure, privateNurl, redirect bool
	impid                           []byte
	price                           float64
	adomain                         []byte
	dealid, bundle, cat             string
	cattax, attr, w, h, mtype       int
	media, brand                    int
	dsa                             dsaMode
	// Video and audio (mtype 2, 3): dur is the bid's dur (0: not sent),
	// vastDur the markup's Duration (0: none), proto the AdCOM protocol
	// code the markup is written as, bidProtocol the bid's protocol (0:
	// not sent), mime the MediaFile type, slot the bid's slotinpod.
	dur, vastDur, proto, bidProtocol, slot int
	mime                                   []byte
}

// builder writes answers. Its scratch buffers make it single-goroutine:
// one per request (pooled by the bidder); nothing it returns may be kept
// past the next build.
type builder struct {
	serial   *atomic.Uint64 // shared bid serial numbers
	jump     *priceJump     // nil: prices never jump
	noise    priceNoise
	names    seatNamer
	fallback func(*kind) // a bad kind that could not be made (may be nil)
	src      rand.PCG
	rng      *rand.Rand // over src
	// sent holds the tag of every bid of the last build, in order.
	sent []string
	// Scratch: the bid being written, its markup, ids, domain and brand.
	spec                          bidSpec
	adm, adid, prevID, dom, brand []byte
	// Per imp, the valid bids written so far (the ones a pod gate keeps).
	pods     []podState
	brands   int  // brand numbers given out in this build
	seatOpen bool // a seatbid is open
	nseats   int
	seatNo   int
	nbids    int
}

// podState is what a pod gate has kept of an imp so far: the valid bids
// written for it, the sum of their durations, and the last one's domain
// and category (for the competitive-separation kinds).
type podState struct {
	count, sum int
	domain     []byte
	cat        string
}

func newBuilder(serial *atomic.Uint64, noise priceNoise, seats int) *builder {
	b := &builder{serial: serial, noise: noise, names: newSeatNamer(seats)}
	b.rng = rand.New(&b.src)
	return b
}

// seed reseeds the builder's random source from (seed, n): the draws of
// the answer numbered n (layout, then mix.draw). build reseeds it for each
// bid's price (priceNoise.factor), so those draws must come first.
func (b *builder) seed(n uint64) { b.src.Seed(b.noise.seed^0x6c6f6164, n) }

// fits reports whether a valid bid of duration dur still fits imp's
// dynamic pod (maxseq and poddur, as podCompliance's podFit: all counts);
// always true for other imps.
func (b *builder) fits(imp int, a *avInfo, dur int) bool {
	ps := &b.pods[imp]
	return (a.maxSeq <= 0 || ps.count < a.maxSeq) && (a.podDur <= 0 || ps.sum+dur <= a.podDur)
}

// validBid fills s with a valid bid of seat for slot sl of p; false when
// none can be made (every domain of its brand is blocked).
func (b *builder) validBid(s *bidSpec, r *reqInfo, p *plan, sl slot, seat int) bool {
	imp, e := &r.imps[sl.imp], &p.elig[sl.elig]
	b.brands++
	*s = bidSpec{tag: tagOK, impid: imp.id, media: imp.media(), brand: b.brands, serial: b.serial.Add(1)}
	s.mtype = s.media
	var ok bool
	if b.dom, ok = appendDomain(b.dom[:0], s.brand, p.badv); !ok {
		return false
	}
	s.adomain = b.dom
	if len(p.cats) > 0 {
		i := e.catBase
		if imp.av.dynamic() {
			i += b.pods[sl.imp].count
		}
		s.cat = p.cats[i%len(p.cats)]
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
	ref := imp.floor
	if s.media == mtVideo || s.media == mtAudio {
		s.dur, s.vastDur, s.proto = e.av.dur, e.av.dur, e.av.proto
		s.mime = e.av.mimeBytes(imp, s.media)
		ref = max(ref, perSecFloor(imp, e.av.dur))
	}
	base := ref
	if base <= 0 {
		base = 1
	}
	s.price = validPrice(base*b.noise.factor(&b.src, b.rng, s.serial), ref, imp.floor)
	if b.jump != nil {
		b.jump.apply(seat, s)
		s.price = validPrice(s.price, ref, imp.floor)
	}
	return true
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// build appends the answer to r under plan p to dst; b.sent then holds
// the tag of each bid written. It returns dst unchanged when there is no
// bid to make (the bidder answers 204). Bids go out seat by seat, bid j of
// the plan in seat j mod p.seatCount.
func (b *builder) build(dst []byte, r *reqInfo, p *plan) []byte {
	rs := respSpec{cur: respCur(r)}
	if p.resp != nil {
		p.resp.applyResp(r, &rs)
	}
	b.sent, b.brands, b.nseats, b.nbids = b.sent[:0], 0, 0, 0
	b.prevID = b.prevID[:0]
	if cap(b.pods) < len(r.imps) {
		b.pods = make([]podState, len(r.imps))
	}
	b.pods = b.pods[:len(r.imps)]
	for i := range b.pods {
		b.pods[i] = podState{domain: b.pods[i].domain[:0]}
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
	for s := range p.seatCount {
		b.seatOpen = false
		b.seatNo = (p.seatStart+s)%p.poolSize + 1
		for j := s; j < len(p.slots); j += p.seatCount {
			dst = b.writeSlot(dst, r, p, p.slots[j])
		}
		if b.seatOpen {
			dst = append(dst, "]}"...)
		}
	}
	if b.nbids == 0 {
		return dst[:start]
	}
	return append(dst, "]}"...)
}

// openBid writes what goes before a bid: the seatbid's head for its first
// bid, else a comma.
func (b *builder) openBid(dst []byte) []byte {
	if b.seatOpen {
		return append(dst, ',')
	}
	if b.nseats > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"seat":"`...)
	dst = b.names.append(dst, b.seatNo)
	dst = append(dst, `","bid":[`...)
	b.seatOpen = true
	b.nseats++
	return dst
}

// writeSlot writes the bid of slot sl (and the valid bids a pod kind needs
// before it). A valid bid that no longer fits its dynamic pod is left out.
func (b *builder) writeSlot(dst []byte, r *reqInfo, p *plan, sl slot) []byte {
	s := &b.spec
	imp := &r.imps[sl.imp]
	if !b.validBid(s, r, p, sl, b.seatNo) {
		return dst
	}
	k := sl.kind
	switch {
	case p.late:
		s.tag = tagLate
	case p.resp != nil:
		s.tag = p.resp.tag
	case k == nil:
	case k.name == "dup-id":
		// The id of the last bid written with one (uniqueBidId fails every
		// later holder of an id, whatever happened to the first); a valid
		// bid first when there is none yet.
		if len(b.prevID) == 0 {
			dst = b.writeValid(dst, r, sl, s)
			s.serial = b.serial.Add(1)
		}
		s.tag, s.dupOf = k.tag, true
		return b.writeBid(dst, r, s)
	case k.pod != podNone:
		return b.writePodKind(dst, r, p, sl, k)
	default:
		s.tag = k.tag
		k.apply(r, imp, s)
		return b.writeBid(dst, r, s)
	}
	return b.writeValid(dst, r, sl, s)
}

// writeValid writes s, a valid (or late) bid, when it fits its pod, and
// counts it in the pod.
func (b *builder) writeValid(dst []byte, r *reqInfo, sl slot, s *bidSpec) []byte {
	imp := &r.imps[sl.imp]
	if !b.fits(sl.imp, &imp.av, s.dur) {
		return dst
	}
	ps := &b.pods[sl.imp]
	ps.count++
	ps.sum += s.dur
	ps.domain = append(ps.domain[:0], s.adomain...)
	ps.cat = s.cat
	return b.writeBid(dst, r, s)
}

// writePodKind writes a bad bid of a pod kind on a dynamic pod: for
// pod-overfill, valid bids until the pod is full and then one more; for
// the separation kinds, a valid bid first when the pod holds none, then a
// bid that fits but shares that bid's adomain or category. When the pod
// has no room left for that, the kind falls back (no bid).
func (b *builder) writePodKind(dst []byte, r *reqInfo, p *plan, sl slot, k *kind) []byte {
	imp := &r.imps[sl.imp]
	s := &b.spec
	switch k.pod {
	case podOverfill:
		full := false
		for range maxPodFill + 1 {
			if !b.validBid(s, r, p, sl, b.seatNo) {
				return dst
			}
			if full = !b.fits(sl.imp, &imp.av, s.dur); full {
				break
			}
			dst = b.writeValid(dst, r, sl, s)
		}
		if !full {
			if b.fallback != nil {
				b.fallback(k)
			}
			return dst
		}
	case podShareDomain, podShareCat:
		if b.pods[sl.imp].count == 0 {
			if !b.validBid(s, r, p, sl, b.seatNo) {
				return dst
			}
			dst = b.writeValid(dst, r, sl, s)
		}
		if !b.validBid(s, r, p, sl, b.seatNo) {
			return dst
		}
		if b.pods[sl.imp].count == 0 || !b.fits(sl.imp, &imp.av, s.dur) {
			if b.fallback != nil {
				b.fallback(k)
			}
			return dst
		}
		ps := &b.pods[sl.imp]
		if k.pod == podShareDomain {
			s.adomain = ps.domain
		} else {
			s.cat = ps.cat
		}
	}
	s.tag = k.tag
	return b.writeBid(dst, r, s)
}

// writeBid writes one bid. A dupOf bid carries the id of the last bid
// written with an id.
func (b *builder) writeBid(dst []byte, r *reqInfo, s *bidSpec) []byte {
	dst = b.openBid(dst)
	b.nbids++
	b.adid = append(b.adid[:0], s.tag...)
	b.adid = append(b.adid, '-')
	b.adid = strconv.AppendUint(b.adid, s.serial, 10)
	adid := b.adid
	dst = append(dst, '{')
	if !s.noID {
		dst = append(dst, `"id":"`...)
		if s.dupOf {
			dst = append(dst, b.prevID...)
		} else {
			dst = append(dst, adid...)
		}
		dst = append(dst, `",`...)
	}
	if !s.dupOf && !s.noID {
		b.prevID = append(b.prevID[:0], adid...)
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
	b.brand = strconv.AppendInt(b.brand[:0], int64(s.brand), 10)
	brand := b.brand
	if !s.noCrid {
		dst = append(dst, `,"crid":"cr-`...)
		dst = append(dst, brand...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"cid":"camp-`...)
	dst = append(dst, brand...)
	dst = append(dst, '"')
	if len(s.adomain) > 0 {
		dst = append(dst, `,"adomain":[`...)
		dst = appendJSONString(dst, s.adomain)
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
	for _, f := range [...]struct {
		key string
		v   int
	}{{`,"dur":`, s.dur}, {`,"protocol":`, s.bidProtocol}, {`,"slotinpod":`, s.slot}} {
		if f.v != 0 {
			dst = append(dst, f.key...)
			dst = strconv.AppendInt(dst, int64(f.v), 10)
		}
	}
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
		dst = append(dst, `,"ext":{"dsa":{"behalf":"`...)
		for range 1 + 19*btoi(s.dsa == dsaTooLong) {
			dst = append(dst, "Brand "...)
			dst = append(dst, brand...)
			dst = append(dst, ' ')
		}
		dst = dst[:len(dst)-1]
		dst = append(dst, `","paid":"Brand `...)
		dst = append(dst, brand...)
		dst = append(dst, `"}}`...)
	}
	b.sent = append(b.sent, s.tag)
	return append(dst, '}')
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendAdm writes the markup of a bid: HTML for a banner, VAST for video
// and audio (appendVAST), a native 1.2 response for native; every URL
// https, in the shapes of gates/testdata/typical-response.json.
func appendAdm(dst []byte, s *bidSpec, adid, brand []byte) []byte {
	switch s.media {
	case mtVideo, mtAudio:
		dst = appendVAST(dst, s, adid, brand)
	case mtNative:
		dst = append(dst, `{"native":{"ver":"1.2","assets":[{"id":1,"title":{"text":"Brand `...)
		dst = append(dst, brand...)
		dst = append(dst, `: new arrivals"}},{"id":2,"img":{"url":"https://cdn.brand-`...)
		dst = append(dst, brand...)
		dst = append(dst, `.com/img/1200x627.jpg","w":1200,"h":627}}],"link":{"url":"https://shop.brand-`...)
		dst = append(dst, brand...)
		dst = append(dst, `.com/?src=`...)
		dst = append(dst, adid...)
		dst = append(dst, `"},"imptrackers":["`+pxHost...)
		dst = append(dst, adid...)
		dst = append(dst, `"]}}`...)
	default:
		var wh [2][8]byte
		w, h := strconv.AppendInt(wh[0][:0], int64(max(s.w, 1)), 10), strconv.AppendInt(wh[1][:0], int64(max(s.h, 1)), 10)
		dst = append(dst, `<div class="ad"><a href="https://click.brand-`...)
		dst = append(dst, brand...)
		dst = append(dst, `.com/c?id=`...)
		dst = append(dst, adid...)
		dst = append(dst, `"><img src="https://cdn.brand-`...)
		dst = append(dst, brand...)
		dst = append(dst, `.com/creative/`...)
		dst = append(dst, w...)
		dst = append(dst, 'x')
		dst = append(dst, h...)
		dst = append(dst, `.png" width="`...)
		dst = append(dst, w...)
		dst = append(dst, `" height="`...)
		dst = append(dst, h...)
		dst = append(dst, `" alt="Brand `...)
		dst = append(dst, brand...)
		dst = append(dst, ` summer sale"></a><img src="`+pxHost...)
		dst = append(dst, adid...)
		dst = append(dst, `" width="1" height="1" style="display:none"></div>`...)
	}
	if s.redirect {
		dst = append(dst, `<script>top.location="https://landing.brand-`...)
		dst = append(dst, brand...)
		dst = append(dst, `.com/"</script>`...)
	}
	return dst
}

// appendJSONString writes s as a JSON string: quotes, backslashes and
// control characters escaped, everything else (HTML included) as is. Runs
// of bytes that need no escape are copied at once.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		if c < 0x20 {
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		} else {
			dst = append(dst, '\\', c)
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
