package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Key file limits.
const (
	MinKeyBytes = 16
	maxKeyFile  = 4096
)

// KeyFileExposed reports whether group or others may read the key file at
// path (mode & 0o044), with its permission bits; false when it cannot be
// stat'ed (reading it reports that).
func KeyFileExposed(path string) (os.FileMode, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return fi.Mode().Perm(), fi.Mode().Perm()&0o044 != 0
}

// ReadKeyFile reads an HMAC key: the file's bytes as they are, except one
// trailing line end ("\n" or "\r\n"), which is removed so that a key
// written by echo or an editor is the same key as one written by printf.
// Nothing else is trimmed or decoded: a base64 text is used as its text.
// The key must hold at least MinKeyBytes bytes, the file at most 4096.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: key file over %d bytes", path, maxKeyFile)
	}
	switch {
	case bytes.HasSuffix(b, []byte("\r\n")):
		b = b[:len(b)-2]
	case bytes.HasSuffix(b, []byte("\n")):
		b = b[:len(b)-1]
	}
	if len(b) < MinKeyBytes {
		return nil, fmt.Errorf("%s: key of %d bytes, want at least %d", path, len(b), MinKeyBytes)
	}
	return b, nil
}
