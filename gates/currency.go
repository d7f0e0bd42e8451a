package gates

import (
	"math"

	"github.com/bidguard/bidguard/engine"
)

// Currency conversion shared by bidSanity and floor. Rates come from the
// default policy's currencyRates (engine.Rates): an amount in `from` is
// worth amount*Rate(from, to) in `to`.

// defaultCur is the currency of an absent cur/bidfloorcur.
func defaultCur(c string) string {
	if c == "" {
		return "USD"
	}
	return c
}

// convert returns amount (in from) expressed in to, rounded to 6 decimals,
// and whether a rate exists.
func convert(r *engine.Rates, amount float64, from, to string) (float64, bool) {
	from, to = defaultCur(from), defaultCur(to)
	rate, ok := r.Rate(from, to)
	if !ok {
		return 0, false
	}
	if from == to {
		return amount, true
	}
	return roundMicros(amount * rate), true
}

// roundMicros rounds to 6 decimals, half to even.
func roundMicros(v float64) float64 { return float64(toMicros(v)) / 1e6 }

// toMicros converts an amount to integer micro-units, rounding half to even.
func toMicros(v float64) int64 { return int64(math.RoundToEven(v * 1e6)) }
