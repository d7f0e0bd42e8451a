package rtb

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionHeaderForwarded: the exchange's X-Openrtb-Version reaches the
// bidder as sent, whatever its length (a one-byte "3" included), like any
// end-to-end header.
func TestVersionHeaderForwarded(t *testing.T) {
	up := testUpstream(t, "")
	addr := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}
	for _, v := range []string{"2.6", "3", "2.5.1"} {
		ctx := parsedCtx(t, "POST /bid HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nX-Openrtb-Version: "+v+"\r\n\r\n", addr)
		require.Contains(t, string(up.appendHead(nil, ctx, 7)), "\r\nX-Openrtb-Version: "+v+"\r\n", v)
	}
}
