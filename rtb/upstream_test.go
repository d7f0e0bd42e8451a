package rtb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendHead: the request head carries the exchange's Content-Type and
// X-Openrtb-Version when each is a plain header value, whatever its length
// (a one-byte version such as "3" included), and falls back or drops them
// otherwise.
func TestAppendHead(t *testing.T) {
	up := &upstream{prefix: []byte("POST /bid HTTP/1.1\r\nHost: dsp\r\n")}
	f := func(ct, version, want string) {
		t.Helper()
		got := up.appendHead(nil, []byte(ct), []byte(version), 42)
		require.Equal(t, "POST /bid HTTP/1.1\r\nHost: dsp\r\n"+want+"Content-Length: 42\r\n\r\n", string(got))
	}
	f("application/json", "2.6", "Content-Type: application/json\r\nX-Openrtb-Version: 2.6\r\n")
	f("application/json", "3", "Content-Type: application/json\r\nX-Openrtb-Version: 3\r\n")
	f("application/json", "", "Content-Type: application/json\r\n")
	f("application/json", "2.6\r\nX-Injected: 1", "Content-Type: application/json\r\n")
	f("application/json", "2.\x7f", "Content-Type: application/json\r\n")
	f("", "2.5", "Content-Type: application/json\r\nX-Openrtb-Version: 2.5\r\n")
	f("text/plain; charset=utf-8", "2.5", "Content-Type: text/plain; charset=utf-8\r\nX-Openrtb-Version: 2.5\r\n")
	f("application/json\x00", "", "Content-Type: application/json\r\n")
	f("t", "~", "Content-Type: t\r\nX-Openrtb-Version: ~\r\n")
	f("application/json", "2\t6", "Content-Type: application/json\r\nX-Openrtb-Version: 2\t6\r\n")
}
