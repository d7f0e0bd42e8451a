package faults

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// deadlineTolerance is how much later than its deadline (T − returnMarginMs
// after it was sent) an answer may arrive: loopback transfer and the
// client's scheduling before its write. The answer's arrival is the
// kernel's receive time of its first bytes (post): with both cores busy the
// client woke tens of milliseconds after bidguard's answer had arrived,
// and that wait was counted against bidguard.
const deadlineTolerance = 25 * time.Millisecond

// returnMargin is deadline.returnMarginMs of every scenario (the default).
const returnMargin = 5 * time.Millisecond

// Bid requests of the scenarios: imps 1, 2 and 3; the fake bidders' bad
// bids name impid 999, which impidMatch rejects.
func bidRequest(id string, tmaxMs int) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"tmax":%d,"imp":[{"id":"1","banner":{"w":300,"h":250}},{"id":"2","banner":{"w":728,"h":90}},{"id":"3","video":{"mimes":["video/mp4"]}}],"site":{"domain":"example.com"}}`, id, tmaxMs))
}

// httpRequest frames a POST to /bid.
func httpRequest(body []byte, extra ...string) []byte {
	var b bytes.Buffer
	b.WriteString("POST /bid HTTP/1.1\r\nHost: bidguard\r\nContent-Type: application/json\r\n")
	for _, h := range extra {
		b.WriteString(h)
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// response is one answer as the exchange saw it.
type response struct {
	status int
	header map[string]string // lower-cased names
	body   []byte
}

// readResponse reads one HTTP/1.1 answer with a Content-Length (bidguard
// always sends one).
func readResponse(br *bufio.Reader) (response, error) {
	var r response
	line, err := br.ReadString('\n')
	if err != nil {
		return r, err
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return r, fmt.Errorf("bad status line %q", line)
	}
	if r.status, err = strconv.Atoi(f[1]); err != nil {
		return r, err
	}
	r.header = map[string]string{}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return r, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, ":")
		r.header[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	n, _ := strconv.Atoi(r.header["content-length"])
	r.body = make([]byte, n)
	_, err = io.ReadFull(br, r.body)
	return r, err
}

// readLean reads one answer's status and body into buf without
// allocating: the load generator's reader.
func readLean(br *bufio.Reader, buf []byte) (int, []byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			for _, c := range bytes.TrimSpace(line[15:]) {
				n = n*10 + int(c-'0')
			}
		}
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(br, buf)
	return status, buf, err
}

// exchangeRaw writes raw bytes on a new connection and reads answers until
// the connection closes or read times out; it returns them and whether the
// connection was closed by the server.
func exchangeRaw(t testing.TB, addr string, raw []byte, wait time.Duration) ([]response, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(raw)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	br := bufio.NewReader(c)
	var out []response
	for {
		r, err := readResponse(br)
		if err != nil {
			return out, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
		}
		out = append(out, r)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// post sends one bid request on its own connection and returns the answer
// and how long it took.
func post(t testing.TB, addr string, body []byte, extra ...string) (response, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	enableStamps(c)
	start := time.Now()
	_, err = c.Write(httpRequest(body, append(extra, "Connection: close")...))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	buf := make([]byte, 64<<10)
	n, at, err := firstRead(c, buf)
	require.NoError(t, err)
	r, err := readResponse(bufio.NewReader(io.MultiReader(bytes.NewReader(buf[:n]), c)))
	require.NoError(t, err)
	return r, at.Sub(start)
}

// plainRead is a read timed when it returns.
func plainRead(c net.Conn, buf []byte) (int, time.Time, error) {
	n, err := c.Read(buf)
	return n, time.Now(), err
}

// checkAnswer is the per-answer invariant: no bid a gate rejects (the fake
// bidders' bad bids carry "bad" in their id) reaches the exchange.
func checkAnswer(t testing.TB, r response) {
	t.Helper()
	require.NotContains(t, string(r.body), `"bad-`, "a rejected bid reached the exchange")
}

// loadSpec is an open-model load: requests scheduled at a constant rate
// over conns connections. Latency is reported from each request's scheduled
// send time (a connection busy with an earlier answer delays the send, and
// that delay shows: no coordinated omission) and judged from the moment the
// request was written: bidguard's deadline runs from when a request
// reaches it, and the load generator's own delays (it shares the machine's
// cores) are reported apart as the send lag.
type loadSpec struct {
	addr     string
	conns    int
	rate     float64 // requests per second, all connections together
	dur      time.Duration
	tmaxMs   int
	pipeline bool // write on schedule without waiting for answers
}

// loadResult summarises a load run.
type loadResult struct {
	sent, answered, errors int
	late                   int // answered after T − margin + deadlineTolerance from the write
	lateBids               int // of which 200 answers (admitted and served)
	lateSched              int // answered after T − margin + deadlineTolerance from the scheduled send
	bids, noBids           int // 200 and 204 answers
	other                  int // other statuses
	latencies              []time.Duration
	sendLags               []time.Duration // write time − scheduled time: the client's own delay plus waits for a busy connection
	wall                   time.Duration
	badBodies              []string
}

func (r loadResult) lateShare() float64 { return share(r.late, r.answered) }

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

func (r loadResult) pct(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, int(p*float64(len(r.latencies))))]
}

func (r loadResult) String() string {
	lag := func(p float64) time.Duration {
		if len(r.sendLags) == 0 {
			return 0
		}
		return r.sendLags[min(len(r.sendLags)-1, int(p*float64(len(r.sendLags))))]
	}
	return fmt.Sprintf("sent %d answered %d (200: %d, 204: %d, other %d) errors %d; late from the write %d (%.1f%%; 200s: %d), from the schedule %d (%.1f%%); latency from the schedule p50 %v p99 %v max %v, %.0f answers/s; send lag p50 %v p99 %v",
		r.sent, r.answered, r.bids, r.noBids, r.other, r.errors, r.late, 100*r.lateShare(), r.lateBids, r.lateSched, 100*share(r.lateSched, r.answered),
		r.pct(0.5), r.pct(0.99), r.pct(1), float64(r.answered)/r.wall.Seconds(), lag(0.5), lag(0.99))
}

// runLoad runs spec and checks every answer with checkAnswer.
func runLoad(t testing.TB, spec loadSpec) loadResult {
	t.Helper()
	deadline := time.Duration(spec.tmaxMs)*time.Millisecond - returnMargin + deadlineTolerance
	perConn := spec.rate / float64(spec.conns)
	interval := time.Duration(float64(time.Second) / perConn)
	n := int(spec.dur / interval)
	start := time.Now().Add(50 * time.Millisecond)
	var mu sync.Mutex
	var res loadResult
	var bad []string
	var wg sync.WaitGroup
	for ci := range spec.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := time.Duration(ci) * interval / time.Duration(spec.conns)
			var local loadResult
			c, err := net.Dial("tcp", spec.addr)
			if err != nil {
				mu.Lock()
				res.errors += n
				mu.Unlock()
				return
			}
			defer c.Close()
			br := bufio.NewReaderSize(c, 16<<10)
			var body []byte
			read := func() (response, error) {
				var r response
				var err error
				r.status, body, err = readLean(br, body)
				r.body = body
				return r, err
			}
			record := func(sched, wrote time.Time, r response, err error) bool {
				if err != nil {
					local.errors++
					return false
				}
				now := time.Now()
				lat := now.Sub(sched)
				local.answered++
				local.latencies = append(local.latencies, lat)
				if lat > deadline {
					local.lateSched++
				}
				if now.Sub(wrote) > deadline {
					local.late++
					if r.status == 200 {
						local.lateBids++
					}
				}
				switch r.status {
				case 200:
					local.bids++
				case 204:
					local.noBids++
				default:
					local.other++
				}
				if bytes.Contains(r.body, []byte(`"bad-`)) {
					local.badBodies = append(local.badBodies, string(r.body))
				}
				return true
			}
			reqs := make([][]byte, 4)
			for i := range reqs {
				reqs[i] = httpRequest(bidRequest(fmt.Sprintf("r%d-%d", ci, i), spec.tmaxMs))
			}
			_ = c.SetDeadline(start.Add(spec.dur + 30*time.Second))
			if spec.pipeline {
				scheds := make(chan [2]time.Time, n)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for range n {
						s, ok := <-scheds
						if !ok {
							return
						}
						r, err := read()
						if !record(s[0], s[1], r, err) {
							return
						}
					}
				}()
				for i := range n {
					sched := start.Add(offset + time.Duration(i)*interval)
					time.Sleep(time.Until(sched))
					wrote := time.Now()
					if _, err := c.Write(reqs[i%len(reqs)]); err != nil {
						break
					}
					local.sendLags = append(local.sendLags, wrote.Sub(sched))
					local.sent++
					scheds <- [2]time.Time{sched, wrote}
				}
				close(scheds)
				<-done
			} else {
				for i := range n {
					sched := start.Add(offset + time.Duration(i)*interval)
					time.Sleep(time.Until(sched))
					wrote := time.Now()
					if _, err := c.Write(reqs[i%len(reqs)]); err != nil {
						local.errors++
						break
					}
					local.sendLags = append(local.sendLags, wrote.Sub(sched))
					local.sent++
					r, err := read()
					if !record(sched, wrote, r, err) {
						break
					}
				}
			}
			mu.Lock()
			res.sent += local.sent
			res.answered += local.answered
			res.errors += local.errors
			res.late += local.late
			res.lateBids += local.lateBids
			res.lateSched += local.lateSched
			res.bids += local.bids
			res.noBids += local.noBids
			res.other += local.other
			res.latencies = append(res.latencies, local.latencies...)
			res.sendLags = append(res.sendLags, local.sendLags...)
			bad = append(bad, local.badBodies...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	slices.Sort(res.latencies)
	slices.Sort(res.sendLags)
	require.Empty(t, bad, "rejected bids reached the exchange")
	return res
}

// saturation measures the rate bidguard answers at when conns clients send
// as fast as answers come back (closed loop), for dur.
func saturation(t testing.TB, addr string, conns int, dur time.Duration, tmaxMs int) float64 {
	t.Helper()
	var total int
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(dur)
	for ci := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(end.Add(10 * time.Second))
			br := bufio.NewReader(c)
			req := httpRequest(bidRequest(fmt.Sprintf("s%d", ci), tmaxMs))
			n := 0
			for time.Now().Before(end) {
				if _, err := c.Write(req); err != nil {
					break
				}
				if _, err := readResponse(br); err != nil {
					break
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return float64(total) / dur.Seconds()
}

// repoFile reads a file of the repository.
func repoFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	require.NoError(t, err)
	return b
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
