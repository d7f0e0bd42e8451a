package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestCurrency(t *testing.T) {
	g := &currency{}
	f := func(reqCur []string, respCur, reason string) {
		t.Helper()
		v := g.CheckResponse(&engine.Input{Request: &openrtb2.BidRequest{Cur: reqCur}, Response: &openrtb2.BidResponse{Cur: respCur}})
		switch reason {
		case "":
			require.False(t, v.Failed(), "%q %q: %s", reqCur, respCur, v.Reason)
			require.False(t, v.Skipped(), "%q %q: %s", reqCur, respCur, v.Reason)
		case "no cur in request":
			require.True(t, v.Skipped(), "%q %q", reqCur, respCur)
			require.Equal(t, reason, v.Reason)
		default:
			require.True(t, v.Failed(), "%q %q", reqCur, respCur)
			require.Equal(t, reason, v.Reason)
			require.Equal(t, 3, v.Loss)
			require.Equal(t, 300, v.NBR)
		}
	}
	f([]string{"USD"}, "USD", "")
	f([]string{"USD"}, "", "")
	f([]string{"EUR", "USD"}, "USD", "")
	f([]string{"", "EUR"}, "EUR", "")
	f([]string{"USD"}, "EUR", "currency EUR not accepted")
	f([]string{"EUR"}, "", "currency USD not accepted")
	f([]string{"USD"}, "usd", "")
	f([]string{"usd"}, "USD", "")
	f([]string{"eur"}, "", "currency USD not accepted")
	f([]string{"USD"}, "eur", "currency EUR not accepted")
	f([]string{"USD", ""}, "GBP", "currency GBP not accepted")
	f([]string{"USD"}, "E\x00R", "currency E?R not accepted")
	f(nil, "JPY", "no cur in request")
	f([]string{}, "JPY", "no cur in request")
	f([]string{"", " "}, "JPY", "no cur in request")
}

func BenchmarkCurrency(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	g := &currency{}
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		if v := g.CheckResponse(in); v.Failed() || v.Skipped() {
			b.Fatal(v.Reason)
		}
	}
}
