//go:build unix

package rtb

import (
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// refusedAddr is a loopback address that refuses connections for the rest
// of the test: a socket bound to the port without listening holds it, so
// no listener (of this process or another on the machine) can take it
// meanwhile, as one could take the port of a listener opened and closed.
func refusedAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	return "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
}
