//go:build !unix

package rtb

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// refusedAddr is a loopback address that refused connections when it was
// returned (the port of a listener opened and closed).
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
