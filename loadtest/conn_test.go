package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// TestClassify: a failed exchange is counted by what went wrong. fasthttp
// reports a deadline reached while reading an answer's headers as
// fasthttp.ErrTimeout, which is not a net.Error: it is a timeout all the
// same, not an answer that is not HTTP.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fasthttp.ErrTimeout, errTimeout},
		{fmt.Errorf("reading: %w", fasthttp.ErrTimeout), errTimeout},
		{os.ErrDeadlineExceeded, errTimeout},
		{&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, errTimeout},
		{io.EOF, errReset},
		{io.ErrUnexpectedEOF, errReset},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, errReset},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, errReset},
		{net.ErrClosed, errReset},
		{errors.New("error when reading response headers: cannot find http status code"), errBadHTTP},
	} {
		require.Equal(t, tc.want, classify(tc.err), "%v", tc.err)
	}
}
