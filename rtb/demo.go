package rtb

import (
	"bytes"
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

// demoBid and demoResponse encode the demo's answer with the fields in
// the order of openrtb2.Bid and openrtb2.BidResponse, so that it reads like
// a bidder's answer (bidguard forwards passing bids byte for byte). Price
// is a pointer: one bad kind has none.
type demoBid struct {
	ID      string   `json:"id"`
	ImpID   string   `json:"impid"`
	Price   *float64 `json:"price,omitempty"`
	AdM     string   `json:"adm,omitempty"`
	ADomain []string `json:"adomain,omitempty"`
	CrID    string   `json:"crid,omitempty"`
	W       int64    `json:"w,omitempty"`
	H       int64    `json:"h,omitempty"`
	MType   int      `json:"mtype,omitempty"`
}

type demoSeatBid struct {
	Bid  []demoBid `json:"bid"`
	Seat string    `json:"seat"`
}

type demoResponse struct {
	ID      string        `json:"id"`
	SeatBid []demoSeatBid `json:"seatbid,omitempty"`
	BidID   string        `json:"bidid"`
	Cur     string        `json:"cur"`
}

func (d *DemoBidder) handle(ctx *fasthttp.RequestCtx) {
	var req openrtb2.BidRequest
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || len(req.Imp) == 0 {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	n := d.n.Add(1) - 1
	var good, bad []demoBid
	for i, imp := range req.Imp {
		if i == 3 {
			break
		}
		price := 1.5
		if imp.BidFloor > 0 {
			price = imp.BidFloor * 2
		}
		id := strconv.Itoa(i + 1)
		g := demoBid{ID: "good-" + id, ImpID: imp.ID, Price: &price, CrID: "demo-cr-" + id,
			ADomain: []string{"bidguard-demo.com"}}
		switch {
		case imp.Banner != nil:
			g.MType, g.AdM = 1, `<div class="demo-ad">bidguard demo ad</div>`
			g.W, g.H = bannerSize(imp.Banner)
		case imp.Video != nil:
			g.MType, g.AdM = 2, demoVAST
		case imp.Audio != nil:
			g.MType, g.AdM = 3, demoVAST
		case imp.Native != nil:
			g.MType, g.AdM = 4, `{"native":{"ver":"1.2","assets":[]}}`
		}
		good = append(good, g)
		b := g
		b.ID, b.CrID = "bad-"+id, "demo-cr-bad-"+id
		switch n % 4 {
		case 0:
			b.ImpID = "no-such-imp"
		case 1:
			neg := -1.0
			b.Price = &neg
		case 2:
			b.ADomain = []string{"example.com"}
		case 3:
			b.Price = nil
		}
		bad = append(bad, b)
	}
	resp := demoResponse{ID: req.ID, BidID: "demo-" + strconv.FormatUint(n, 10), Cur: "USD"}
	if len(good) > 0 {
		resp.SeatBid = append(resp.SeatBid, demoSeatBid{Seat: "demo-dsp", Bid: good})
	}
	if len(bad) > 0 {
		resp.SeatBid = append(resp.SeatBid, demoSeatBid{Seat: "demo-bad", Bid: bad})
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // markup as a bidder sends it: <div>, not \u003cdiv\u003e
	_ = enc.Encode(resp)     // strings, numbers and slices: cannot fail
	ctx.SetContentType("application/json")
	ctx.SetBody(bytes.TrimSuffix(body.Bytes(), []byte("\n")))
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
