package testbidder

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// exchange writes one raw request to addr and returns the raw answer head
// line (or the read error).
func exchange(t *testing.T, addr, req string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	return bufio.NewReader(c).ReadString('\n')
}

const rawReq = "POST /bid?x=1 HTTP/1.1\r\nHost: b\r\nX-B: 2\r\nx-a: 1\r\nX-B: 3\r\nContent-Length: 5\r\n\r\n{\"a\"}"

func TestRawRecordsTheHeadAsWritten(t *testing.T) {
	b := Raw(t, Answering(Wire(204, nil)))
	line, err := exchange(t, b.Addr, rawReq)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 204 No Content\r\n", line)
	r := b.Last(t)
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "/bid", r.Path())
	require.Equal(t, "x=1", r.Query())
	require.Equal(t, [][2]string{{"Host", "b"}, {"X-B", "2"}, {"x-a", "1"}, {"X-B", "3"}, {"Content-Length", "5"}}, r.Header)
	require.Equal(t, []string{"2", "3"}, r.Values("x-b"))
	require.Equal(t, "1", r.Get(t, "X-A"))
	require.Empty(t, r.Get(t, "X-None"))
	require.Equal(t, `{"a"}`, string(r.Body))
	require.EqualValues(t, 1, b.Calls.Load())
	require.EqualValues(t, 1, b.Accepted.Load())
}

func TestHTTPRecordsAndAnswers(t *testing.T) {
	b := HTTP(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // the recorded body, read again
		w.WriteHeader(200)
		_, _ = w.Write(body)
	})
	resp, err := http.Post(b.URL+"/p?q=1", "application/json", strings.NewReader(`{"id":"1"}`))
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, `{"id":"1"}`, string(got))
	r := b.Last(t)
	require.Equal(t, "/p", r.Path())
	require.Equal(t, "q=1", r.Query())
	require.Equal(t, "application/json", r.Get(t, "content-type"))
	require.Equal(t, `{"id":"1"}`, string(r.Body))
	require.Len(t, b.Requests(), 1)
}

func TestHangAndCloseAfterRead(t *testing.T) {
	hang := Raw(t, Hang)
	c, err := net.Dial("tcp", hang.Addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, rawReq)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return hang.Calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "no byte back")
	require.Equal(t, 1, hang.OpenConns())
	hang.CloseConns()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "closed by the bidder")

	closing := Raw(t, CloseAfterRead)
	_, err = exchange(t, closing.Addr, rawReq)
	require.ErrorIs(t, err, io.EOF)
	require.EqualValues(t, 1, closing.Calls.Load())
}

func TestStopAndRestartOnTheSameAddress(t *testing.T) {
	b := Raw(t, Answering(Wire(204, nil)))
	addr := b.Addr
	b.Stop()
	_, err := net.Dial("tcp", addr)
	require.Error(t, err, "stopped: refused")
	b.Restart()
	require.Equal(t, addr, b.Addr)
	line, err := exchange(t, b.Addr, rawReq)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 204 No Content\r\n", line)
}

func TestReadRequestMalformed(t *testing.T) {
	for _, in := range []string{"GARBAGE\r\n\r\n", "POST / HTTP/1.1\r\nNoColon\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"} {
		_, err := ReadRequest(bufio.NewReader(strings.NewReader(in)))
		require.ErrorIs(t, err, ErrMalformed, in)
	}
	_, err := ReadRequest(bufio.NewReader(strings.NewReader("POST / HTTP/1.1\r\n")))
	require.ErrorIs(t, err, io.EOF, "a read error is returned as it is")
}
