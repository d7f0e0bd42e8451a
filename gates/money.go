package gates

import (
	"errors"
	"math"
	"strings"

	"github.com/bidguard/bidguard/engine"
)

// Money shared by bidSanity and floor. Rates come from the default policy's
// currencyRates (engine.Rates); currency codes compare case-insensitively.
// Amounts are compared unrounded, except that floor compares in micro-units
// (a millionth of the unit); a converted floor is rounded to 6 decimals
// only where a reason writes it.

// missingRate is the onMissingRate option of the gates that convert a
// floor into the response currency (floor, videoCompliance): what happens to
// a bid whose floor has no rate. "fail" (the default) rejects it, fail
// closed; "pass" skips the bid in that gate.
type missingRate string

const missingRateDefault missingRate = "fail"

func (m missingRate) validate() error {
	if m != "fail" && m != "pass" {
		return errors.New("onMissingRate must be fail or pass")
	}
	return nil
}

// pass reports whether a bid without a rate is skipped rather than rejected.
func (m missingRate) pass() bool { return m == "pass" }

// underFloor converts a floor of amount (> 0) in cur into the response
// currency and compares the bid's price (0 when absent) with it. done is
// true with the verdict to return when there is no rate (rejected, or
// skipped when passMissing) or the price reaches the floor; otherwise the
// bid is under it, and price, floor and converted are for the caller's
// reason (floorReject).
func underFloor(in *engine.Input, b *engine.Bid, amount float64, cur string, passMissing bool) (v engine.Verdict, done bool, price, floor float64, converted bool) {
	respCur := in.ResponseCur()
	floor, converted, ok := convertFloor(in.Rates, amount, cur, respCur)
	if !ok {
		reason := "no rate for " + formatCur(respCur) + "/" + formatCur(defaultCur(cur))
		if passMissing {
			return engine.SkipBid(reason, "rate"), true, 0, 0, false
		}
		return engine.Reject(reason, engine.LossInvalidBidResponse, engine.NBRResponseRejectedBelowFloor), true, 0, 0, false
	}
	if b.HasPrice {
		price = b.Price
	}
	if atLeastMicros(price, floor) {
		return engine.Pass(), true, 0, 0, false
	}
	return engine.Verdict{}, false, price, floor, converted
}

// floorReject rejects a bid priced under a floor: "bid price <p> below
// [deal ]floor<what>", with the deal's codes when isDeal.
func floorReject(price float64, what string, isDeal bool) engine.Verdict {
	if isDeal {
		return engine.Reject("bid price "+formatNum(price)+" below deal floor"+what, engine.LossBelowDealFloor, engine.NBRResponseRejectedBelowDealFloor)
	}
	return engine.Reject("bid price "+formatNum(price)+" below floor"+what, engine.LossBelowAuctionFloor, engine.NBRResponseRejectedBelowFloor)
}

// defaultCur is the currency of an absent cur/bidfloorcur.
func defaultCur(c string) string {
	if c == "" {
		return "USD"
	}
	return c
}

// convertFloor expresses a floor of amount in from (default USD) in to
// (default USD), unrounded. converted is true when the currencies differ
// (the reason then writes the floor rounded to 6 decimals); ok is false when
// no rate exists.
func convertFloor(r *engine.Rates, amount float64, from, to string) (v float64, converted, ok bool) {
	from, to = defaultCur(from), defaultCur(to)
	if from == to || engine.SameCurrency(from, to) {
		return amount, false, true // what Convert returns for one currency
	}
	v, ok = r.Convert(amount, from, to)
	return v, true, ok
}

// maxExactMicros is 2^63: below it an amount's micro-units fit an int64 and
// are compared as integers; from it on amounts compare as float64, never
// clamped.
const maxExactMicros = 0x1p63

// atLeastMicros reports whether price ≥ floor compared in integer
// micro-units, each rounded half to even. Amounts whose micro-units do not
// fit an int64 compare as they are.
func atLeastMicros(price, floor float64) bool {
	p, f := math.RoundToEven(price*1e6), math.RoundToEven(floor*1e6)
	if math.Abs(p) < maxExactMicros && math.Abs(f) < maxExactMicros {
		return p >= f
	}
	return price >= floor
}

// formatFloor writes a floor for a reason: as is, or, when it was converted,
// first rounded to 6 decimals (half to even). From 2^53 micro-units on, a
// float64 holds no digit below the micro-unit: nothing to round.
func formatFloor(v float64, converted bool) string {
	if converted {
		if m := v * 1e6; math.Abs(m) < 0x1p53 {
			v = math.RoundToEven(m) / 1e6
		}
	}
	return formatNum(v)
}

// formatCur writes a currency code for a reason: upper-cased, quoted.
func formatCur(c string) string { return quote(strings.ToUpper(c)) }
