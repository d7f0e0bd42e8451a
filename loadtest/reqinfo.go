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
	av       avInfo
}

// avInfo is the media object the bidder answers a video or audio imp with
// (OpenRTB 2.6 3.2.7 Video, 3.2.8 Audio): what a CTV answer must fit.
type avInfo struct {
	minDur, maxDur int
	rqddurs        []int    // entries > 0 only
	protocols      []int    // protocols; for a video without them, the 2.5 protocol when > 0
	mimes          [][]byte // as sent
	podID          []byte
	slot           int // slotinpod: 1 first, -1 last, 2 first or last, 0 none
	podDur, maxSeq int
	perSec         float64 // mincpmpersec, in the imp's bidfloorcur
}

// inPod reports whether the imp is part of an ad pod: a podid, a dynamic
// pod's poddur or maxseq, or a guaranteed slot.
func (a *avInfo) inPod() bool {
	return len(a.podID) > 0 || a.podDur > 0 || a.maxSeq > 0 || a.slot != 0
}

// dynamic reports whether the imp is a dynamic pod (or a hybrid pod's
// dynamic part): the seller fills it with up to maxseq ads within poddur.
func (a *avInfo) dynamic() bool { return a.podDur > 0 || a.maxSeq > 0 }

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
	switch mt := imp.media(); mt {
	case mtVideo, mtAudio:
		key := "video"
		if mt == mtAudio {
			key = "audio"
		}
		readAV(&imp.av, v.Get(key), mt == mtVideo)
	}
}

// readAV reads a video or audio object into a, keeping a's slices.
func readAV(a *avInfo, o *fastjson.Value, video bool) {
	*a = avInfo{rqddurs: a.rqddurs[:0], protocols: a.protocols[:0], mimes: a.mimes[:0]}
	a.minDur, a.maxDur = int(o.GetFloat64("minduration")), int(o.GetFloat64("maxduration"))
	for _, d := range o.GetArray("rqddurs") {
		if n := int(d.GetFloat64()); n > 0 {
			a.rqddurs = append(a.rqddurs, n)
		}
	}
	for _, p := range o.GetArray("protocols") {
		a.protocols = append(a.protocols, int(p.GetFloat64()))
	}
	if p := int(o.GetFloat64("protocol")); video && len(a.protocols) == 0 && p > 0 {
		a.protocols = append(a.protocols, p)
	}
	for _, m := range o.GetArray("mimes") {
		a.mimes = append(a.mimes, m.GetStringBytes())
	}
	if id := o.Get("podid"); id != nil && id.Type() == fastjson.TypeString {
		a.podID = id.GetStringBytes()
	}
	a.slot = int(o.GetFloat64("slotinpod"))
	a.podDur, a.maxSeq = int(o.GetFloat64("poddur")), int(o.GetFloat64("maxseq"))
	a.perSec = o.GetFloat64("mincpmpersec")
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
