package gates

import (
	"math"

	"github.com/bidguard/bidguard/engine"
)

// Money: currency conversion and micro-units shared by bidSanity and floor. Rates come from the
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

// maxMicros bounds the amounts toMicrosSat converts exactly: beyond it an
// int64 of micro-units would overflow.
const maxMicros = 9.2e18

// toMicrosSat is toMicros saturated at the int64 range, so that absurd
// amounts (a price of 1e300) still compare in the right order.
func toMicrosSat(v float64) int64 {
	m := math.RoundToEven(v * 1e6)
	switch {
	case m >= maxMicros:
		return math.MaxInt64
	case m <= -maxMicros:
		return math.MinInt64
	}
	return int64(m)
}

// convertMicros expresses amount (in from, default USD) in micro-units of to
// (default USD), rounding half to even after conversion, and reports whether
// a rate exists. The same currency needs no rate.
func convertMicros(r *engine.Rates, amount float64, from, to string) (int64, bool) {
	from, to = defaultCur(from), defaultCur(to)
	rate, ok := r.Rate(from, to)
	if !ok {
		return 0, false
	}
	if from == to {
		return toMicrosSat(amount), true
	}
	return toMicrosSat(amount * rate), true
}

// formatMicros writes an amount of micro-units as formatNum does (the
// converted floor of a reason, rounded to 6 decimals).
func formatMicros(m int64) string { return formatNum(float64(m) / 1e6) }
