//go:build unix

package config

import (
	"os"
	"syscall"
)

// readFile reads the file path into buf[:0], grown as needed: the seat
// files of a reload are compared with what was read before, and kept only
// when they changed. It reads with the system calls themselves: an
// *os.File would allocate and try to register each of 10,000 files with
// the network poller. Errors are os.Open's and Read's (*os.PathError).
func readFile(path string, buf []byte) ([]byte, error) {
	var fd int
	var err error
	for {
		if fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return buf, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
