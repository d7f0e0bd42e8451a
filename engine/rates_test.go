package engine_test

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestRatesCompareCodesCaseInsensitively(t *testing.T) {
	r, err := engine.CompileRates(map[string]float64{"eur/Usd": 1.08})
	require.NoError(t, err)
	rate := 1.08
	f := func(from, to string, want float64, wantOK bool) {
		t.Helper()
		got, ok := r.Convert(2, from, to)
		require.Equal(t, wantOK, ok, "%s->%s", from, to)
		require.Equal(t, want, got, "%s->%s", from, to)
	}
	f("EUR", "USD", 2*rate, true)
	f("eur", "usd", 2*rate, true)
	f("USD", "EUR", 2/rate, true)
	f("uSd", "USD", 2, true)
	f("GBP", "USD", 0, false)
	f("EURO", "USD", 0, false)
	f("USD", "usd", 2, true)
	require.True(t, engine.SameCurrency("usd", "USD"))
	require.True(t, engine.SameCurrency("USD", "usd"), "either side may be lower case")
	require.True(t, engine.SameCurrency("eUr", "EuR"))
	require.False(t, engine.SameCurrency("USD", "usx"))
	require.False(t, engine.SameCurrency("USD", "USDX"))

	_, err = engine.CompileRates(map[string]float64{"EUR/USD": 1.08, "eur/usd": 1.1})
	require.ErrorContains(t, err, `"eur/usd" is given twice`)
	_, err = engine.CompileRates(map[string]float64{"usd/USD": 1})
	require.ErrorContains(t, err, "converts a currency to itself")
	_, err = engine.CompileRates(map[string]float64{"EU1/USD": 1})
	require.ErrorContains(t, err, "is not BASE/QUOTE")
}
