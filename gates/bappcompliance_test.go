package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"

	"github.com/stretchr/testify/require"
)

func TestBappCompliance(t *testing.T) {
	g := &bappCompliance{}
	const req = `{"id":"r","imp":[{"id":"1"}],"bapp":["com.blocked.app","987654321"]}`
	f := func(req, bid, want string) {
		t.Helper()
		skip, v := txBid(t, g, req, bid)
		if want == "no bapp in request" {
			require.Equal(t, want, skip)
			return
		}
		require.Empty(t, skip)
		if want == "" {
			require.False(t, v.Failed(), "%s: %s", bid, v.Reason)
			return
		}
		require.True(t, v.Failed(), bid)
		require.Equal(t, want, v.Reason, bid)
		require.Equal(t, 206, v.Loss)
		require.Equal(t, 300, v.NBR)
	}
	f(req, `{"id":"b","impid":"1"}`, "")
	f(req, `{"id":"b","impid":"1","bundle":"com.other.app"}`, "")
	f(req, `{"id":"b","impid":"1","bundle":"com.blocked.app"}`, "blocked app bundle: com.blocked.app")
	f(req, `{"id":"b","impid":"1","bundle":"com.Blocked.App"}`, "blocked app bundle: com.Blocked.App")
	f(req, `{"id":"b","impid":"1","bundle":"987654321"}`, "blocked app bundle: 987654321")
	f(req, `{"id":"b","impid":"1","bundle":"com.blocked.app.lite"}`, "") // exact ids, not prefixes
	f(req, `{"id":"b","impid":"1","bundle":"blocked.app"}`, "")
	f(`{"id":"r","imp":[{"id":"1"}]}`, `{"id":"b","impid":"1","bundle":"com.blocked.app"}`, "no bapp in request")
	f(`{"id":"r","imp":[{"id":"1"}],"bapp":[]}`, `{"id":"b","impid":"1","bundle":"x"}`, "no bapp in request")
	f(`{"id":"r","imp":[{"id":"1"}],"bapp":[""]}`, `{"id":"b","impid":"1"}`, "no bapp in request")
}

// bappInput is the typical pair with a bundle on every bid.
func bappInput(tb testing.TB) *engine.Input {
	ev := txTypical(tb)
	for i := range ev.In.Bids {
		ev.In.Bids[i].Bundle = "com.brand.app"
	}
	return &ev.In
}

func BenchmarkBappCompliance(b *testing.B) {
	g := &bappCompliance{}
	in := bappInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				b.Fatal(v.Reason)
			}
		}
	}
}
