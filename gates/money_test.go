package gates

import (
	"math"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestConvertFloor(t *testing.T) {
	rate := 1.08
	rates, err := engine.CompileRates(map[string]float64{"EUR/USD": rate})
	require.NoError(t, err)
	f := func(amount float64, from, to string, want float64, wantConverted, wantOK bool) {
		t.Helper()
		got, converted, ok := convertFloor(rates, amount, from, to)
		require.Equal(t, wantOK, ok, "%v %s->%s", amount, from, to)
		require.Equal(t, wantConverted, converted, "%v %s->%s", amount, from, to)
		require.Equal(t, want, got, "%v %s->%s", amount, from, to)
	}
	f(0.5, "", "", 0.5, false, true)
	f(0.5, "USD", "", 0.5, false, true)
	f(0.5, "usd", "USD", 0.5, false, true)
	f(1, "EUR", "USD", 1.08, true, true)
	f(1, "eur", "Usd", 1.08, true, true)
	f(0.3333333, "EUR", "USD", 0.3333333*1.08, true, true) // unrounded
	f(1, "USD", "EUR", 1/rate, true, true)                 // the inverse divides
	f(1e-7, "EUR", "USD", 1e-7*1.08, true, true)           // a tiny floor stays a floor
	f(1, "GBP", "USD", 0, true, false)
	f(1, "USD", "GBP", 0, true, false)
	f(1, "USDX", "USD", 0, true, false)
	_, _, ok := convertFloor(nil, 1, "EUR", "USD")
	require.False(t, ok)
	m, _, ok := convertFloor(nil, 1, "eur", "EUR")
	require.True(t, ok)
	require.Equal(t, 1.0, m)
}

func TestAtLeastMicros(t *testing.T) {
	f := func(price, floor float64, want bool) {
		t.Helper()
		require.Equal(t, want, atLeastMicros(price, floor), "%v >= %v", price, floor)
	}
	f(0.5, 0.5, true)
	f(0.4999996, 0.5, true) // 500000 micros each
	f(0.4999994, 0.5, false)
	// Half to even at the micro: 1/128 is exactly 7812.5 micros.
	f(0.007812, 1.0/128, true)
	f(0.0078125, 0.007813, false)
	// Beyond int64 micro-units the amounts compare as float64, never clamped.
	f(1e300, 2e300, false)
	f(2e300, 1e300, true)
	f(9.3e12, 9.4e12, false)
	f(1e308, math.MaxFloat64, false)
	f(math.MaxFloat64, 1e308, true)
	f(1, 1e300, false)
}

func TestFormatFloor(t *testing.T) {
	rate := 1.08
	require.Equal(t, "25.0000001", formatFloor(25.0000001, false), "an unconverted floor is written as is")
	require.Equal(t, "25", formatFloor(25.0000001, true))
	require.Equal(t, "0.925926", formatFloor(1/rate, true))
	require.Equal(t, "0.36", formatFloor(0.3333333*1.08, true))
	require.Equal(t, "0", formatFloor(1e-7*1.08, true))
	require.Equal(t, "0.000001", formatFloor(0.0000005000001, true))
	require.Equal(t, "0.000002", formatFloor(0.0000025, true), "half to even")
	require.Equal(t, formatNum(1e300), formatFloor(1e300, true), "nothing below the micro-unit to round")
	require.Equal(t, "USD", formatCur("usd"))
}

func TestFormatRatio(t *testing.T) {
	require.Equal(t, "150", formatRatio(150))
	require.Equal(t, "2.33", formatRatio(7.0/3))
	require.Equal(t, "50", formatRatio(50.0000005), "written rounded, compared unrounded")
	require.Equal(t, formatNum(1e307), formatRatio(1e307), "too large to scale: written as is")
}

// convertFloorBefore is convertFloor before it answered one currency
// itself: the reference of TestConvertFloorAgreesWithBefore.
func convertFloorBefore(r *engine.Rates, amount float64, from, to string) (float64, bool, bool) {
	from, to = defaultCur(from), defaultCur(to)
	v, ok := r.Convert(amount, from, to)
	return v, !engine.SameCurrency(from, to), ok
}

func TestConvertFloorAgreesWithBefore(t *testing.T) {
	rates, err := engine.CompileRates(map[string]float64{"EUR/USD": 1.08, "gbp/eur": 1.17})
	require.NoError(t, err)
	curs := []string{"", "USD", "usd", "UsD", "EUR", "eur", "GBP", "JPY", "US", "USDX", "ÜSD"}
	for _, r := range []*engine.Rates{nil, rates} {
		for _, from := range curs {
			for _, to := range curs {
				for _, amount := range []float64{0, 0.5, 1.25, 1e300} {
					v, c, ok := convertFloor(r, amount, from, to)
					wv, wc, wok := convertFloorBefore(r, amount, from, to)
					require.Equal(t, []any{wv, wc, wok}, []any{v, c, ok}, "%v %q -> %q (rates %v)", amount, from, to, r != nil)
				}
			}
		}
	}
}
