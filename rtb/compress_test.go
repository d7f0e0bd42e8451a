package rtb

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// TestGzipAnswers: with compressAbove, an answer over it is gzipped when
// the exchange accepts gzip, and sent as it is otherwise; without
// compressAbove nothing is compressed.
func TestGzipAnswers(t *testing.T) {
	resp := readFile(t, "typical-response.json")
	b := testbidder.HTTP(t, testbidder.Answer(200, resp))
	f := func(compressAbove int, ae string, wantGzip bool) {
		t.Helper()
		sc := startSidecar(t, compile(t, fmt.Sprintf("upstreams:\n  - {name: dsp, url: %q, path: /bid, compressAbove: %d}\npolicy:\n  gates: [{gate: impidMatch}]\n", b.URL, compressAbove), nil))
		a := sc.post("/bid", withTmax(t, 1000), "Accept-Encoding: "+ae)
		require.Equal(t, 200, a.status)
		body := a.body
		if wantGzip {
			require.Equal(t, "gzip", a.header.Get("Content-Encoding"))
			zr, err := gzip.NewReader(bytes.NewReader(a.body))
			require.NoError(t, err)
			body, err = io.ReadAll(zr)
			require.NoError(t, err)
			require.Less(t, len(a.body), len(body))
			require.EqualValues(t, 1, sc.metric(`bidguard_answers_gzipped_total{upstream="dsp"}`))
		} else {
			require.Empty(t, a.header.Get("Content-Encoding"))
		}
		require.Len(t, bidIDs(t, body), 3, "the answer, whole")
	}
	f(100, "gzip", true)
	f(100, "br, gzip;q=0.5", true)
	f(100, "-", false)
	f(100, "gzip;q=0", false)
	f(100000, "gzip", false)
	f(0, "gzip", false)
}
