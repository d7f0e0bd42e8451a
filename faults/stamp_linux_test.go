//go:build linux

package faults

import (
	byteorder "encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// enableStamps asks the kernel to stamp what c receives with its receive
// time (SO_TIMESTAMPNS), before anything arrives: a segment received
// before carries no stamp.
func enableStamps(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
			})
		}
	}
}

// firstRead reads the first bytes of the answer on c and returns them with
// the kernel's receive time of the segment that held them (enableStamps):
// when the answer reached this host, not when this process, sharing the
// machine's cores, was scheduled to read it. Without a stamp, the time the
// read returned.
func firstRead(c net.Conn, buf []byte) (int, time.Time, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return plainRead(c, buf)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return plainRead(c, buf)
	}
	oob := make([]byte, syscall.CmsgSpace(16))
	var n, oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, 0)
			if !errors.Is(rerr, syscall.EINTR) {
				return !errors.Is(rerr, syscall.EAGAIN)
			}
		}
	})
	now := time.Now()
	switch {
	case err != nil:
		return 0, now, err
	case rerr != nil:
		return 0, now, rerr
	case n == 0:
		return 0, now, io.EOF
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return n, now, nil
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_TIMESTAMPNS || len(m.Data) < 16 {
			continue
		}
		at := time.Unix(int64(byteorder.NativeEndian.Uint64(m.Data[:8])), int64(byteorder.NativeEndian.Uint64(m.Data[8:16])))
		// The kernel's clock is the wall clock: its age, taken from now,
		// keeps the monotonic reading.
		if age := now.Sub(at); age >= 0 && age < time.Minute {
			return n, now.Add(-age), nil
		}
	}
	return n, now, nil
}
