//go:build unix

package audit

import (
	"errors"
	"os"
	"syscall"
)

// errLocked is returned by lockFile when another process holds the log.
var errLocked = errors.New("held by another process")

// lockFile takes an exclusive advisory lock (flock) on f, waiting for it
// when wait is set. The lock goes with the file's last close, and with the
// process.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}
