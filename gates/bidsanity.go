package gates

// bidSanity (OpenRTB 2.6 §4.2.3, Bid.price): a price must be present, not
// negative, under maxPrice when set, and at most maxFloorMultiple times the
// matching imp's floor, converted from bidfloorcur to the response currency
// with the default policy's currencyRates. The ratio is computed unrounded;
// the reason writes it rounded to 2 decimals and a converted floor rounded
// to 6.

import (
	"errors"
	"math"

	"github.com/bidguard/bidguard/engine"
)

// bidSanityOptions configures bidSanity.
type bidSanityOptions struct {
	// MaxFloorMultiple is the largest price / floor ratio (default 50, > 0).
	MaxFloorMultiple float64 `yaml:"maxFloorMultiple"`
	// MaxPrice caps the price in the response currency (default: none; > 0 when set).
	MaxPrice *float64 `yaml:"maxPrice"`
}

func (o *bidSanityOptions) validate() error {
	var errs []error
	if !(o.MaxFloorMultiple > 0) || math.IsInf(o.MaxFloorMultiple, 0) {
		errs = append(errs, errors.New("maxFloorMultiple must be > 0 and finite"))
	}
	if o.MaxPrice != nil && (!(*o.MaxPrice > 0) || math.IsInf(*o.MaxPrice, 0)) {
		errs = append(errs, errors.New("maxPrice must be > 0 and finite"))
	}
	return errors.Join(errs...)
}

type bidSanity struct {
	maxMultiple float64
	maxPrice    float64 // 0: none
}

var bidSanityFactory = engine.Factory{
	Name: "bidSanity", ResultName: "rtb.bid-sanity", Kind: engine.PerBid,
	Options: func() any { return &bidSanityOptions{MaxFloorMultiple: 50} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*bidSanityOptions)
		if err := o.validate(); err != nil {
			return nil, err
		}
		g := &bidSanity{maxMultiple: o.MaxFloorMultiple}
		if o.MaxPrice != nil {
			g.maxPrice = *o.MaxPrice
		}
		return g, nil
	},
}

func (g *bidSanity) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *bidSanity) Prepare(*engine.Input) string { return "" }

// CheckBid applies the price checks in order.
func (g *bidSanity) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	if !b.HasPrice {
		return engine.Reject("bid missing price", engine.LossMissingBidPrice, engine.NBRResponseRejectedGeneral)
	}
	p := b.Price
	if p < 0 {
		return engine.Reject("bid price is negative", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	}
	if g.maxPrice > 0 && p > g.maxPrice {
		return engine.Reject("bid price "+formatNum(p)+" exceeds maxPrice "+formatNum(g.maxPrice), engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	}
	imp := in.ImpOf(b)
	if imp == nil || !(imp.BidFloor > 0) {
		return engine.Pass()
	}
	// Unrounded: a ratio of 50.0000005 is over 50, and a converted floor
	// under half a micro-unit is still a floor.
	floor, converted, ok := convertFloor(in.Rates, imp.BidFloor, imp.BidFloorCur, in.ResponseCur())
	if !ok || !(floor > 0) {
		return engine.Pass()
	}
	ratio := p / floor
	if ratio <= g.maxMultiple {
		return engine.Pass()
	}
	return engine.Reject("bid price "+formatNum(p)+" is "+formatRatio(ratio)+"x the floor "+formatFloor(floor, converted)+
		" (max "+formatNum(g.maxMultiple)+"x)", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
}

var _ engine.BidGate = (*bidSanity)(nil)
