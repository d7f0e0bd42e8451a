package rtb

import (
	"encoding/json"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"
)

// DemoBidder is the fake bidder of `serve --demo`: it answers every bid
// request with a rotating mix, so a newcomer sees the gates at work without
// other software. Request n (from 0) gets, per imp:
//
//	n%4 == 0: one good bid                      → forwarded unchanged
//	n%4 == 1: a good bid and one for an unknown imp → impidMatch removes it
//	n%4 == 2: a good bid and one with a negative price → bidSanity removes it
//	n%4 == 3: only a bid without a price         → every bid removed: 204
type DemoBidder struct {
	srv *fasthttp.Server
	n   atomic.Uint64
}

// NewDemoBidder returns a demo bidder; Serve it on a loopback listener.
func NewDemoBidder() *DemoBidder {
	d := &DemoBidder{}
	d.srv = &fasthttp.Server{Handler: d.handle, NoDefaultServerHeader: true, IdleTimeout: 30 * time.Second, CloseOnShutdown: true}
	return d
}

// Serve answers on ln until Close.
func (d *DemoBidder) Serve(ln net.Listener) error { return d.srv.Serve(ln) }

// Close stops the demo bidder.
func (d *DemoBidder) Close() error { return d.srv.Shutdown() }

func (d *DemoBidder) handle(ctx *fasthttp.RequestCtx) {
	var req openrtb2.BidRequest
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || len(req.Imp) == 0 {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	n := d.n.Add(1) - 1
	type obj = map[string]any
	var good, bad []obj
	for i, imp := range req.Imp {
		if i == 3 {
			break
		}
		price := 1.5
		if imp.BidFloor > 0 {
			price = imp.BidFloor * 2
		}
		id := strconv.Itoa(i + 1)
		g := obj{"id": "good-" + id, "impid": imp.ID, "price": price, "crid": "demo-cr-" + id,
			"adomain": []string{"bidguard-demo.com"}}
		switch {
		case imp.Banner != nil:
			g["mtype"], g["adm"] = 1, `<div class="demo-ad">bidguard demo ad</div>`
			if w, h := bannerSize(imp.Banner); w > 0 {
				g["w"], g["h"] = w, h
			}
		case imp.Video != nil:
			g["mtype"], g["adm"] = 2, demoVAST
		case imp.Audio != nil:
			g["mtype"], g["adm"] = 3, demoVAST
		case imp.Native != nil:
			g["mtype"], g["adm"] = 4, `{"native":{"ver":"1.2","assets":[]}}`
		}
		switch n % 4 {
		case 0:
			good = append(good, g)
		case 1:
			good = append(good, g)
			bad = append(bad, obj{"id": "bad-impid-" + id, "impid": "no-such-imp", "price": price, "crid": "demo-cr-x"})
		case 2:
			good = append(good, g)
			bad = append(bad, obj{"id": "bad-price-" + id, "impid": imp.ID, "price": -1, "crid": "demo-cr-y"})
		case 3:
			bad = append(bad, obj{"id": "no-price-" + id, "impid": imp.ID, "crid": "demo-cr-z"})
		}
	}
	var seatbid []obj
	if len(good) > 0 {
		seatbid = append(seatbid, obj{"seat": "demo-dsp", "bid": good})
	}
	if len(bad) > 0 {
		seatbid = append(seatbid, obj{"seat": "demo-bad", "bid": bad})
	}
	body, _ := json.Marshal(obj{"id": req.ID, "bidid": "demo-" + strconv.FormatUint(n, 10), "cur": "USD", "seatbid": seatbid})
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

const demoVAST = `<VAST version="4.0"><Ad id="demo"><InLine><AdSystem>bidguard demo</AdSystem><AdTitle>demo</AdTitle></InLine></Ad></VAST>`

// bannerSize is the banner's w×h, else its first fixed format.
func bannerSize(b *openrtb2.Banner) (w, h int64) {
	if b.W != nil && b.H != nil {
		return *b.W, *b.H
	}
	for _, f := range b.Format {
		if f.W > 0 && f.H > 0 {
			return f.W, f.H
		}
	}
	return 0, 0
}
