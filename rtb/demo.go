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
// request with good bids and bad ones, so a newcomer sees the gates at work
// without other software: every answer is filtered. Request n (from 0) gets,
// for each of its first three imps, a good bid (seat demo-dsp) and a bad one
// (seat demo-bad), the bad kind rotating with n:
//
//	n%4 == 0: a bid for an imp the request does not hold → impidMatch
//	n%4 == 1: a negative price                            → bidSanity
//	n%4 == 2: a placeholder adomain (example.com)         → adomainVerify
//	n%4 == 3: no price                                    → bidSanity
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
		good = append(good, g)
		b := obj{"id": "bad-" + id, "impid": imp.ID, "price": price, "crid": "demo-cr-bad-" + id, "adomain": []string{"bidguard-demo.com"}}
		for k, v := range g {
			if _, set := b[k]; !set && k != "id" {
				b[k] = v
			}
		}
		switch n % 4 {
		case 0:
			b["impid"] = "no-such-imp"
		case 1:
			b["price"] = -1
		case 2:
			b["adomain"] = []string{"example.com"}
		case 3:
			delete(b, "price")
		}
		bad = append(bad, b)
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
