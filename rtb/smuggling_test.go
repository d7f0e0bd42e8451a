package rtb

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// smuggled is a well-formed bid request to /bid: the bytes an attacker
// hides after a first request whose framing is ambiguous.
var smuggled = func() string {
	body := `{"id":"smuggled","imp":[{"id":"1"}],"tmax":500}`
	return "POST /bid HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

type probe struct {
	name, req, reason string
}

// probe builds a first request from head lines (joined as given: each
// carries its own line end) and a body, followed by the smuggled request.
func mkProbe(name, reason, head, body string) probe {
	return probe{name: name, reason: reason, req: "POST /bid HTTP/1.1\r\nHost: x\r\n" + head + body + smuggled}
}

// smugglingProbes: each must be answered 400 with its reason and the
// connection closed, and nothing may reach the bidder.
var smugglingProbes = []probe{
	mkProbe("CL then TE", errLengthAndTE.reason, "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("TE then CL", errLengthAndTE.reason, "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("CHUNKED", errLengthAndTE.reason, "Content-Length: 5\r\nTransfer-Encoding: CHUNKED\r\n\r\n", "0\r\n\r\n"),
	mkProbe("tab before the value", errLengthAndTE.reason, "Content-Length: 5\r\nTransfer-Encoding:\tchunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("obs-fold value", errBadTE.reason, "Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("obs-fold line", errObsFold.reason, "Content-Length: 5\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("TE behind a bare LF", errBareLF.reason, "Content-Length: 5\r\nX-A: 1\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("head ended by a bare LF", errBareLF.reason, "Content-Length: 5\n\n", "0\r\n\r\n"),
	mkProbe("bare CR", errBareCR.reason, "Content-Length: 5\rTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("TE twice", errDupTE.reason, "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("TE list", errBadTE.reason, "Transfer-Encoding: gzip, chunked\r\n\r\n", "0\r\n\r\n"),
	mkProbe("TE identity", errBadTE.reason, "Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("TE chunked, identity", errBadTE.reason, "Transfer-Encoding: chunked, identity\r\n\r\n", "0\r\n\r\n"),
	mkProbe("space before the colon", errFieldName.reason, "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("NUL in a name", errFieldName.reason, "Transfer\x00Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("leading whitespace", errObsFold.reason, " Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("CL twice, different", errDupLength.reason, "Content-Length: 5\r\nContent-Length: 0\r\n\r\n", "0\r\n\r\n"),
	mkProbe("CL twice, same", errDupLength.reason, "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("CL list", errBadLength.reason, "Content-Length: 5, 5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("CL sign", errBadLength.reason, "Content-Length: +5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("CL hex", errBadLength.reason, "Content-Length: 0x5\r\n\r\n", "0\r\n\r\n"),
	mkProbe("chunk size OWS", errBadChunkSize.reason, "Transfer-Encoding: chunked\r\n\r\n", "5 \r\nhello\r\n0\r\n\r\n"),
	mkProbe("chunk size overflow", errBadChunkSize.reason, "Transfer-Encoding: chunked\r\n\r\n", "1000000000\r\n"),
	mkProbe("chunk size missing", errBadChunkSize.reason, "Transfer-Encoding: chunked\r\n\r\n", ";x\r\n"),
	mkProbe("chunk extension bare LF", errBareLF.reason, "Transfer-Encoding: chunked\r\n\r\n", "5;a\nhello\r\n0\r\n\r\n"),
	mkProbe("chunk longer than its size", errBadChunkFrame.reason, "Transfer-Encoding: chunked\r\n\r\n", "5\r\nhelloX\r\n0\r\n\r\n"),
	mkProbe("trailer obs-fold", errObsFold.reason, "Transfer-Encoding: chunked\r\n\r\n", "0\r\nX: 1\r\n y\r\n\r\n"),
	mkProbe("trailer bare LF", errBareLF.reason, "Transfer-Encoding: chunked\r\n\r\n", "0\r\nX: 1\n\r\n"),
}

// rawExchange writes req on a new connection to the sidecar and reads
// every answer until the sidecar closes the connection.
func rawExchange(t *testing.T, addr, req string) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	br := bufio.NewReader(c)
	var out []*http.Response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			_, rerr := br.ReadByte()
			require.ErrorIs(t, rerr, io.EOF, "the sidecar closes the connection (answers so far: %d)", len(out))
			return out
		}
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		out = append(out, resp)
	}
}

// TestSmuggling: a request whose framing a proxy in front could read
// another way is answered 400 and its connection closed; the request hidden
// behind it never reaches the bidder.
func TestSmuggling(t *testing.T) {
	sc, b := setup(t, testbidder.Answer(204, nil), "")
	addr := strings.TrimPrefix(sc.base, "http://")
	for _, p := range smugglingProbes {
		answers := rawExchange(t, addr, p.req)
		require.Len(t, answers, 1, p.name)
		require.Equal(t, 400, answers[0].StatusCode, p.name)
		body, _ := io.ReadAll(answers[0].Body)
		require.Equal(t, "bad request framing: "+p.reason+"\n", string(body), p.name)
		require.Equal(t, "text/plain; charset=utf-8", answers[0].Header.Get("Content-Type"), p.name)
	}
	require.Zero(t, b.Calls.Load(), "no request reached the bidder")

	// HTTP/1.0 does not know chunked: fasthttp refuses it (RFC 9112 §6.1).
	answers := rawExchange(t, addr, "POST /bid HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+smuggled)
	require.Len(t, answers, 1)
	require.Equal(t, 400, answers[0].StatusCode)
	require.Zero(t, b.Calls.Load())

	// Well-framed requests pipelined on one connection: one bidder call
	// each, chunked or not, with leading CRLFs.
	chunkedBody := `{"id":"c","imp":[{"id":"1"}],"tmax":500}`
	chunked := "POST /bid HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(chunkedBody)), 16) + ";x=y\r\n" + chunkedBody + "\r\n0\r\nX-Trailer: 1\r\n\r\n"
	answers = rawExchange(t, addr, smuggled+"\r\n"+chunked+smuggled+"GET /bid HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	require.Len(t, answers, 4)
	for i, a := range answers[:3] {
		require.Equal(t, 204, a.StatusCode, "request %d", i)
	}
	require.Equal(t, 405, answers[3].StatusCode)
	require.EqualValues(t, 3, b.Calls.Load())
}
