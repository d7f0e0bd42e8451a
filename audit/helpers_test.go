package audit

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testKey is the key of the tests and of the golden vectors.
var testKey = []byte("bidguard-golden-key-0123456789ab")

// counter is a Counter for tests.
type counter struct{ n atomic.Int64 }

func (c *counter) Add(n int)  { c.n.Add(int64(n)) }
func (c *counter) get() int64 { return c.n.Load() }

type testMeters struct{ written, dropped, gap, recovered, panics counter }

func (m *testMeters) meters() Meters {
	return Meters{Written: &m.written, Dropped: &m.dropped, Gap: &m.gap, Recovered: &m.recovered, Panics: &m.panics}
}

// gate is a Counter that, once armed, blocks the writer in its next Add
// (after a write) until opened: the test then owns the queue.
type gate struct {
	counter
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) Add(n int) {
	g.counter.Add(n)
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.entered)
		<-g.open
	}
}

func (g *gate) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

func openLog(t testing.TB, opt Options) *Log {
	t.Helper()
	if opt.Key == nil {
		opt.Key = testKey
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := Open(opt)
	require.NoError(t, err)
	return l
}

func reject(i int) *Record {
	return &Record{Kind: KindReject, ReqID: "req-" + strconv.Itoa(i), Seat: "seat-a", BidID: "bid-" + strconv.Itoa(i), CRID: "cr-1",
		ADomain: []string{"brand.com"}, PriceMicros: 1_500_000, Gate: "rtb.impid-match",
		Reason: "bid impid not present in request", NBR: 300, Loss: 3, Policy: "0123456789ab"}
}

// readRecords parses every line of the files (which must verify).
func readRecords(t testing.TB, files ...string) []Record {
	t.Helper()
	var out []Record
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var r Record
			_, err := parseLine(line, &r, nil)
			require.NoError(t, err, "%s: %q", f, line)
			out = append(out, r)
		}
	}
	return out
}

func kinds(recs []Record) []Kind {
	out := make([]Kind, len(recs))
	for i := range recs {
		out[i] = recs[i].Kind
	}
	return out
}

func logPath(t testing.TB) string { return filepath.Join(t.TempDir(), "audit.log") }

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond, msg)
}
