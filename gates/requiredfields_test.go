package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRequiredFields(t *testing.T) {
	g := &requiredFields{}
	const req = `{"id":"r","imp":[{"id":"1"}]}`
	f := func(bid, want string, loss int) {
		t.Helper()
		skip, v := txBid(t, g, req, bid)
		require.Empty(t, skip)
		if want == "" {
			require.False(t, v.Failed(), "%s: %s", bid, v.Reason)
			return
		}
		require.True(t, v.Failed(), bid)
		require.Equal(t, want, v.Reason, bid)
		require.Equal(t, loss, v.Loss)
		require.Equal(t, 300, v.NBR)
	}
	f(`{"id":"b","impid":"1","price":1,"crid":"c","adm":"<b>x</b>"}`, "", 0)
	f(`{"id":"b","impid":"1","price":1,"crid":"c","nurl":"https://w.example/win"}`, "", 0)
	f(`{"id":"b","impid":"1","price":1,"crid":"c","adm":"x","nurl":"https://w.example/win"}`, "", 0)
	f(`{"impid":"1","price":1,"crid":"c","adm":"x"}`, "bid missing id", 3)
	f(`{"id":"","impid":"1","price":1,"crid":"c","adm":"x"}`, "bid missing id", 3)
	f(`{"id":"b","impid":"1","price":1,"adm":"x"}`, "bid missing crid", 8)
	f(`{"id":"b","impid":"1","price":1,"crid":"","adm":"x"}`, "bid missing crid", 8)
	f(`{"id":"b","impid":"1","price":1,"crid":"c"}`, "bid missing markup", 7)
	f(`{"id":"b","impid":"1","price":1,"crid":"c","adm":"","nurl":""}`, "bid missing markup", 7)
	// In order: id, crid, markup.
	f(`{"impid":"1","price":1}`, "bid missing id", 3)
	f(`{"id":"b","impid":"1","price":1}`, "bid missing crid", 8)
}

func BenchmarkRequiredFields(b *testing.B) {
	g := &requiredFields{}
	in := &txTypical(b).In
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Prepare(in)
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				b.Fatal(v.Reason)
			}
		}
	}
}
