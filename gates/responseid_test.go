package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestResponseID(t *testing.T) {
	g := &responseID{}
	f := func(reqID, respID string, pass bool) {
		t.Helper()
		ev := txEval(t, `{"id":`+reqID+`,"imp":[{"id":"1"}]}`, `{"id":`+respID+`,"seatbid":[{"bid":[{"id":"b","impid":"1","price":1}]}]}`)
		v := g.CheckResponse(&ev.In)
		if pass {
			require.False(t, v.Failed(), "%s %s", reqID, respID)
			return
		}
		require.True(t, v.Failed(), "%s %s", reqID, respID)
		require.Equal(t, "response id does not match request id", v.Reason)
		require.Equal(t, 5, v.Loss)
		require.Equal(t, 300, v.NBR)
	}
	f(`"r-1"`, `"r-1"`, true)
	f(`"r-1"`, `"r-2"`, false)
	f(`"r-1"`, `"R-1"`, false) // byte for byte
	f(`"r-1"`, `"r-1 "`, false)
	f(`"r-1"`, `""`, false)
	f(`"r-1"`, `null`, false)
	f(`"\u0072-1"`, `"r-1"`, true) // compared after JSON decoding
	require.Equal(t, engine.Response, responseIDFactory.Kind)
}

func BenchmarkResponseID(b *testing.B) {
	g := &responseID{}
	in := &txTypical(b).In
	b.ReportAllocs()
	for b.Loop() {
		if v := g.CheckResponse(in); v.Failed() {
			b.Fatal(v.Reason)
		}
	}
}
