package rtb

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkShed is what an overload shed costs: the typical request with
// tmax 20, whose budget is under minBidderMs, answered 204 before its body
// is decoded (shed reason "budget"; an in-flight shed takes the same path
// one step later), over the in-memory path of BenchmarkEndToEnd. Compare
// with BenchmarkEndToEnd, the same request served; both count the
// exchange's client, which shares the process, and the served one the
// bidder too.
func BenchmarkShed(b *testing.B) {
	post, stop := benchPathStatus(b, nil, readFile(b, "typical-response.json"), fasthttp.StatusNoContent)
	defer stop()
	req, resp := benchRequest(b), fasthttp.AcquireResponse()
	req.SetBody(withTmax(b, 20))
	b.ReportAllocs()
	for b.Loop() {
		post(req, resp)
	}
}
