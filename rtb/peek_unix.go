//go:build unix

package rtb

import (
	"errors"
	"syscall"
)

// peekFD looks at a socket without reading or blocking (MSG_PEEK |
// MSG_DONTWAIT): a byte waiting, EOF, an error, or nothing yet.
func peekFD(fd uintptr) probeResult {
	var b [1]byte
	for {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			return probeQuiet
		case err != nil, n == 0:
			return probeClosed
		default:
			return probeBytes
		}
	}
}
