package rtb

import (
	"net"
	"testing"
)

// BenchmarkAppendHead is the bidder's request head for an exchange request
// with a dozen headers (end-to-end, hop-by-hop, Connection-named,
// X-Forwarded-For) and a query, to an upstream with headers.set and
// headers.remove.
func BenchmarkAppendHead(b *testing.B) {
	up := testUpstream(b, "    headers: {set: {X-Api-Key: k}, remove: [cookie]}\n")
	ctx := parsedCtx(b, "POST /bid?pub=1&src=x HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: 0\r\n"+
		"User-Agent: exchange/2.1\r\nAuthorization: Bearer 0123456789abcdef\r\nX-Request-Id: 3f2a9c\r\nX-Openrtb-Version: 2.6\r\n"+
		"Cookie: uid=abc\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Forwarded-For: 198.51.100.7\r\n"+
		"Accept-Encoding: gzip\r\nX-Exchange-Region: eu-west\r\nX-Tenant: acme\r\n\r\n", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
	dst := up.appendHead(nil, ctx, 1000)
	b.ReportAllocs()
	for b.Loop() {
		dst = up.appendHead(dst[:0], ctx, 1000)
	}
}
