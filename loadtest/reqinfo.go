package main

import (
	"errors"

	"github.com/valyala/fastjson"
)

// reqInfo is what the fake bidder reads from a bid request: enough to make
// bids that pass every gate of bidguard's default policy, and to break one
// rule on purpose. Byte slices point into the parser's memory: valid while
// the request is handled. Reused through bidderState; parse resets it.
type reqInfo struct {
	id     []byte
	tmaxMs int      // 0: absent
	cur    [][]byte // non-blank entries of cur
	cattax int      // 0: absent (taxonomy 1)
	bcat   [][]byte
	badv   [][]byte
	bapp   [][]byte
	coppa  bool // regs.coppa or regs.ext.coppa is 1
	dsa    bool // regs.ext.dsa (or regs.dsa) dsarequired is 2 or 3
	imps   []impInfo
}

// Media types (OpenRTB mtype).
const (
	mtBanner = 1
	mtVideo  = 2
	mtAudio  = 3
	mtNative = 4
	numMedia = 4
)

type impInfo struct {
	id       []byte
	floor    float64
	floorCur []byte // empty: USD
	secure   bool
	private  bool // pmp.private_auction 1: not bid on (no deal support)
	offers   [numMedia + 1]bool
	battr    [numMedia + 1][]int
	bw, bh   int // the banner's first fixed size; 0: none declared
	vw, vh   int // the video player size
}

var errNoImp = errors.New("bid request without id or imp")

// parse reads body into r.
func (r *reqInfo) parse(p *fastjson.Parser, body []byte) error {
	v, err := p.ParseBytes(body)
	if err != nil {
		return err
	}
	*r = reqInfo{cur: r.cur[:0], bcat: r.bcat[:0], badv: r.badv[:0], bapp: r.bapp[:0], imps: r.imps[:0]}
	r.id = v.GetStringBytes("id")
	r.tmaxMs = int(v.GetFloat64("tmax"))
	r.cattax = int(v.GetFloat64("cattax"))
	for _, c := range v.GetArray("cur") {
		if s := c.GetStringBytes(); len(trimSpace(s)) > 0 {
			r.cur = append(r.cur, s)
		}
	}
	r.bcat = appendStrings(r.bcat, v.GetArray("bcat"))
	r.badv = appendStrings(r.badv, v.GetArray("badv"))
	r.bapp = appendStrings(r.bapp, v.GetArray("bapp"))
	r.coppa = v.GetFloat64("regs", "coppa") == 1 || v.GetFloat64("regs", "ext", "coppa") == 1
	dsa := v.Get("regs", "ext", "dsa")
	if dsa == nil || dsa.Type() != fastjson.TypeObject {
		dsa = v.Get("regs", "dsa")
	}
	if dsa != nil {
		req := dsa.GetFloat64("dsarequired")
		r.dsa = req == 2 || req == 3
	}
	for _, iv := range v.GetArray("imp") {
		r.imps = append(r.imps, impInfo{})
		readImp(&r.imps[len(r.imps)-1], iv)
	}
	if len(r.id) == 0 || len(r.imps) == 0 {
		return errNoImp
	}
	return nil
}

func readImp(imp *impInfo, v *fastjson.Value) {
	imp.id = v.GetStringBytes("id")
	imp.floor = v.GetFloat64("bidfloor")
	imp.floorCur = v.GetStringBytes("bidfloorcur")
	imp.secure = v.GetFloat64("secure") == 1
	imp.private = v.GetFloat64("pmp", "private_auction") == 1
	for mt, key := range [...]string{mtBanner: "banner", mtVideo: "video", mtAudio: "audio", mtNative: "native"} {
		if key == "" {
			continue
		}
		o := v.Get(key)
		if o == nil || o.Type() != fastjson.TypeObject {
			continue
		}
		imp.offers[mt] = true
		for _, a := range o.GetArray("battr") {
			imp.battr[mt] = append(imp.battr[mt], int(a.GetFloat64()))
		}
	}
	if b := v.Get("banner"); b != nil {
		imp.bw, imp.bh = int(b.GetFloat64("w")), int(b.GetFloat64("h"))
		if imp.bw <= 0 || imp.bh <= 0 {
			imp.bw, imp.bh = 0, 0
			for _, f := range b.GetArray("format") {
				if w, h := int(f.GetFloat64("w")), int(f.GetFloat64("h")); w > 0 && h > 0 {
					imp.bw, imp.bh = w, h
					break
				}
			}
		}
	}
	if vd := v.Get("video"); vd != nil {
		imp.vw, imp.vh = int(vd.GetFloat64("w")), int(vd.GetFloat64("h"))
	}
}

func appendStrings(dst [][]byte, vs []*fastjson.Value) [][]byte {
	for _, s := range vs {
		if b := s.GetStringBytes(); len(b) > 0 {
			dst = append(dst, b)
		}
	}
	return dst
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// media is the media type the bidder answers an imp with: the first it
// offers of banner, video, native, audio; 0 when none.
func (imp *impInfo) media() int {
	for _, mt := range [...]int{mtBanner, mtVideo, mtNative, mtAudio} {
		if imp.offers[mt] {
			return mt
		}
	}
	return 0
}
