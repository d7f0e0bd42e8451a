package gates

// floor (OpenRTB 2.6 §3.2.4 Imp.bidfloor/bidfloorcur, §3.2.12
// Deal.bidfloor/bidfloorcur, §4.2.3 Bid.price/dealid): a bid's price may not
// be below its floor. The floor is the imp's bidfloor in bidfloorcur
// (default USD) or, for a bid whose dealid names a deal of its imp with
// bidfloor > 0, that deal's bidfloor in deal.bidfloorcur (default USD, never
// the imp's currency). The floor is converted to the response currency with
// the default policy's currencyRates (codes in any case) and both amounts
// are compared in integer micro-units, rounded half to even: a price equal
// to the floor passes. Amounts beyond int64 micro-units compare as float64,
// never clamped. Reasons write a floor as is, or, when it was converted,
// rounded to 6 decimals, in the bid's currency; codes upper-cased.
//   - below the imp floor → bid price <p> below floor <f> (100 / 301)
//   - below the deal floor → bid price <p> below deal floor <f> (101 / 304)
//   - no rate for the pair → no rate for <cur>/<floorcur> (3 / 301), unless
//     onMissingRate: pass, which skips the bid (counted, why="rate")

import (
	"github.com/bidguard/bidguard/engine"
)

// floorOptions configures floor.
type floorOptions struct {
	// OnMissingRate: a bid whose floor cannot be converted to the response
	// currency is rejected (fail, the default) or skipped (pass).
	OnMissingRate missingRate `yaml:"onMissingRate"`
}

type floor struct {
	passMissingRate bool
}

var floorFactory = engine.Factory{
	Name: "floor", ResultName: "rtb.floor", Kind: engine.PerBid,
	Options: func() any { return &floorOptions{OnMissingRate: missingRateDefault} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*floorOptions)
		if err := o.OnMissingRate.validate(); err != nil {
			return nil, err
		}
		return &floor{passMissingRate: o.OnMissingRate.pass()}, nil
	},
}

func (g *floor) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request in which no imp and no deal sets a floor > 0.
func (g *floor) Prepare(in *engine.Input) string {
	for i := range in.Request.Imp {
		imp := &in.Request.Imp[i]
		if imp.BidFloor > 0 {
			return ""
		}
		if imp.PMP == nil {
			continue
		}
		for j := range imp.PMP.Deals {
			if imp.PMP.Deals[j].BidFloor > 0 {
				return ""
			}
		}
	}
	return "no bidfloor in request"
}

// CheckBid compares the price with the bid's floor. A bid that matches no
// imp, or whose imp and deal set no floor > 0, passes. A missing price
// counts as 0.
func (g *floor) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp := in.ImpOf(b)
	if imp == nil {
		return engine.Pass()
	}
	amount, cur, isDeal := imp.BidFloor, imp.BidFloorCur, false
	if d := findDeal(imp.PMP, b.DealID); d != nil && d.BidFloor > 0 {
		amount, cur, isDeal = d.BidFloor, d.BidFloorCur, true
	}
	if !(amount > 0) {
		return engine.Pass()
	}
	v, done, price, floor, converted := underFloor(in, b, amount, cur, g.passMissingRate)
	if done {
		return v
	}
	return floorReject(price, " "+formatFloor(floor, converted), isDeal)
}

var _ engine.BidGate = (*floor)(nil)
