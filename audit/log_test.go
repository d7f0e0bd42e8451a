package audit

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLogRoundTrip(t *testing.T) {
	path := logPath(t)
	var m testMeters
	l := openLog(t, Options{Path: path, Meters: m.meters()})
	require.NoError(t, l.Append(&Record{Kind: KindConfig, Policy: "0123456789ab", Reason: "startup: bidguard.yaml"}))
	for i := range 10 {
		require.True(t, l.Enqueue(reject(i)))
	}
	require.NoError(t, l.Close())
	require.False(t, l.Enqueue(reject(99)), "closed")
	require.ErrorIs(t, l.Append(&Record{Kind: KindConfig}), ErrClosed)

	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(12), sum.Records)
	require.Equal(t, 1, sum.Segments)
	require.True(t, sum.Genesis)
	require.Equal(t, uint64(1), sum.FirstSeq)
	require.Equal(t, uint64(12), sum.LastSeq)
	require.Equal(t, map[Kind]uint64{KindSegment: 1, KindConfig: 1, KindReject: 10}, sum.Kinds)
	require.Equal(t, int64(12), m.written.get())
	require.Equal(t, int64(1), m.dropped.get(), "the record enqueued after Close")

	recs := readRecords(t, path)
	r := recs[2]
	require.Equal(t, "req-0", r.ReqID)
	require.Equal(t, []string{"brand.com"}, r.ADomain)
	require.Equal(t, int64(1_500_000), r.PriceMicros)
	require.Equal(t, 300, r.NBR)
	require.Equal(t, recs[1].MAC, r.Prev)

	_, err = VerifyFiles([]string{path}, []byte("another-key-0123456789"), nil)
	var be *BreakError
	require.ErrorAs(t, err, &be)
	require.Equal(t, 1, be.Line)
	require.Contains(t, be.What, "--key-file")
	_, err = VerifyFiles([]string{path}, nil, nil)
	require.ErrorAs(t, err, &be, "an HMAC chain does not verify as plain SHA-256")
}

// Reopening continues the chain, and the key must be the same.
func TestLogReopenContinues(t *testing.T) {
	path := logPath(t)
	for run := range 3 {
		l := openLog(t, Options{Path: path})
		require.True(t, l.Enqueue(reject(run)))
		require.NoError(t, l.Close())
	}
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(4), sum.Records, "one segment record, then one record per run")

	_, err = Open(Options{Path: path, Key: []byte("another-key-0123456789")})
	require.ErrorContains(t, err, "mac does not verify")
	_, err = Open(Options{Path: path})
	require.ErrorContains(t, err, "mac does not verify", "no key is a different MAC")
}

func TestLogSecondProcessRefused(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path})
	defer l.Close()
	_, err := Open(Options{Path: path, Key: testKey})
	require.ErrorIs(t, err, errLocked)
}

// A full queue drops, counts, and a gap record with the exact count
// follows: the writer is held inside the written counter after a write
// while the test fills the queue.
func TestLogFullQueueGap(t *testing.T) {
	const queue, extra = 8, 5
	path := logPath(t)
	var m testMeters
	written := newGate()
	mm := m.meters()
	mm.Written = written
	l := openLog(t, Options{Path: path, Queue: queue, Meters: mm})

	written.arm()
	require.True(t, l.Enqueue(reject(0)))
	<-written.entered // record 0 is written and counted; its slot is freed after the count
	for i := 1; i < queue; i++ {
		require.True(t, l.Enqueue(reject(i)), "slot %d", i)
	}
	for i := range extra {
		require.False(t, l.Enqueue(reject(100+i)), "the queue is full")
	}
	require.Equal(t, int64(extra), m.dropped.get())
	close(written.open)
	require.NoError(t, l.Close())

	recs := readRecords(t, path)
	want := []Kind{KindSegment, KindReject, KindGap}
	for range queue - 1 {
		want = append(want, KindReject)
	}
	require.Equal(t, want, kinds(recs))
	require.Equal(t, strconv.Itoa(extra)+" records dropped", recs[2].Reason)
	for i := 1; i < queue; i++ {
		require.Equal(t, "req-"+strconv.Itoa(i), recs[2+i].ReqID, "queued records keep their order")
	}
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Gaps)
	require.Equal(t, uint64(extra), sum.Dropped)
	require.Equal(t, int64(1), m.gap.get())
}

// Many producers at once: every record is written or counted as dropped,
// and the drops are exactly the sum of the gap records.
func TestLogConcurrentProducers(t *testing.T) {
	path := logPath(t)
	var m testMeters
	l := openLog(t, Options{Path: path, Queue: 64, FsyncEvery: 8, SegmentBytes: 4096, Meters: m.meters()})
	const producers, each = 8, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				l.Enqueue(reject(p*each + i))
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Close())
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	rejects := sum.Kinds[KindReject]
	require.Equal(t, uint64(producers*each), rejects+sum.Dropped)
	require.Equal(t, m.dropped.get(), int64(sum.Dropped))
	require.Equal(t, m.written.get(), int64(sum.Records))
	require.Greater(t, sum.Segments, 1)
	t.Logf("%d written, %d dropped in %d gaps, %d segments", rejects, sum.Dropped, sum.Gaps, sum.Segments)
}

// A panic in the writer is recovered and counted; the writer reopens the
// log from the file and the chain goes on.
func TestLogWriterPanic(t *testing.T) {
	path := logPath(t)
	var m testMeters
	mm := m.meters()
	mm.Written = &panicky{left: 2}
	l := openLog(t, Options{Path: path, Meters: mm})
	for i := range 5 {
		require.True(t, l.Enqueue(reject(i)))
		waitFor(t, func() bool { return mm.Written.(*panicky).get() == int64(i+2) }, "the writer writes the record")
	}
	require.NoError(t, l.Close())
	require.Equal(t, int64(1), m.panics.get())
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(5), sum.Kinds[KindReject], "records written before the panic stay in the chain")
}

// panicky panics in its left-th call.
type panicky struct {
	counter
	left int
}

func (p *panicky) Add(n int) {
	p.counter.Add(n)
	p.left--
	if p.left == 0 {
		panic("counter exploded")
	}
}

func TestLogTornTail(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path})
	for i := range 3 {
		l.Enqueue(reject(i))
	}
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	torn := `{"v":1,"seq":5,"ts":"2026`
	require.NoError(t, os.WriteFile(path, append(data, torn...), 0o640))

	_, err = VerifyFiles([]string{path}, testKey, nil)
	var be *BreakError
	require.ErrorAs(t, err, &be)
	require.Equal(t, 5, be.Line)
	require.Contains(t, be.What, "torn tail")

	var m testMeters
	l = openLog(t, Options{Path: path, Meters: m.meters()})
	l.Enqueue(reject(3))
	require.NoError(t, l.Close())
	require.Equal(t, int64(1), m.recovered.get())
	recs := readRecords(t, path)
	require.Equal(t, []Kind{KindSegment, KindReject, KindReject, KindReject, KindRecovered, KindReject}, kinds(recs))
	require.Equal(t, strconv.Itoa(len(torn))+" bytes truncated", recs[4].Reason)
	require.Equal(t, uint64(5), recs[4].Seq, "the torn record's seq is reused")
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Recoveries)
	require.Equal(t, uint64(len(torn)), sum.Truncated)
}

// A segment whose only content is torn (its segment record cut), or that
// is empty, continues from the previous segment.
func TestLogTornSegmentStart(t *testing.T) {
	for _, cut := range []int{40, 0} {
		path := logPath(t)
		l := openLog(t, Options{Path: path, SegmentBytes: 1000})
		for i := range 4 {
			l.Enqueue(reject(i))
		}
		require.NoError(t, l.Close())
		segs, err := Segments(path)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(segs), 2)
		last := segs[len(segs)-1]
		data, err := os.ReadFile(last)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(last, data[:cut], 0o640))

		l = openLog(t, Options{Path: path, SegmentBytes: 1000})
		require.NoError(t, l.Close())
		_, err = VerifyFiles([]string{path}, testKey, nil)
		require.NoError(t, err, "cut at %d", cut)
		recs := readRecords(t, last)
		require.Equal(t, KindSegment, recs[0].Kind)
		if cut > 0 {
			require.Equal(t, KindRecovered, recs[1].Kind)
			require.Equal(t, "40 bytes truncated", recs[1].Reason)
		}
	}
}

// A damaged complete last record stops Open: complete lines are never
// truncated.
func TestLogDamagedLastRecord(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path})
	l.Enqueue(reject(0))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-10] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o640))
	_, err = Open(Options{Path: path, Key: testKey})
	require.ErrorContains(t, err, path+": last record")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, data, after)
}

func TestLogRotation(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path, SegmentBytes: 4096})
	for i := range 60 {
		require.True(t, l.Enqueue(reject(i)))
	}
	require.NoError(t, l.Close())
	segs, err := Segments(path)
	require.NoError(t, err)
	require.Greater(t, len(segs), 3)
	require.Equal(t, path, segs[0])
	require.Equal(t, path+".000002", segs[1])
	var prevLast Record
	for i, s := range segs {
		fi, err := os.Stat(s)
		require.NoError(t, err)
		recs := readRecords(t, s)
		require.Equal(t, KindSegment, recs[0].Kind, s)
		require.Equal(t, strconv.Itoa(i+1), recs[0].Reason)
		if i > 0 {
			require.Equal(t, prevLast.MAC, recs[0].Prev, "%s links to the previous segment's last mac", s)
			require.Less(t, fi.Size(), int64(4096+1024), "a segment overshoots by at most one record")
		}
		prevLast = recs[len(recs)-1]
	}
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Equal(t, len(segs), sum.Segments)
	require.Equal(t, uint64(60), sum.Kinds[KindReject])

	// Reopening appends to the newest segment.
	l = openLog(t, Options{Path: path, SegmentBytes: 4096})
	l.Enqueue(reject(60))
	require.NoError(t, l.Close())
	after, err := Segments(path)
	require.NoError(t, err)
	require.Len(t, after, len(segs))
	_, err = VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
}

func TestLogClipsFields(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path})
	long := string(make([]byte, 1000))
	r := reject(0)
	r.BidID = "é" + long // clipped inside nothing: ASCII NULs after a 2-byte rune
	r.CRID = "\xff\xfebad utf-8"
	r.Reason = long + long
	r.ADomain = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	require.True(t, l.Enqueue(r))
	require.NoError(t, l.Close())
	recs := readRecords(t, path)
	got := recs[1]
	require.Len(t, got.BidID, MaxID)
	require.Len(t, got.Reason, MaxReason)
	require.Len(t, got.ADomain, MaxDomains)
	require.Equal(t, "\uFFFDbad utf-8", got.CRID, "a run of invalid bytes becomes one U+FFFD")
	_, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
}

// The head is logged every HeadEvery and at Close, as the last record's
// seq and mac: what to ship outside the host.
func TestLogHead(t *testing.T) {
	path := logPath(t)
	var out syncBuf
	l := openLog(t, Options{Path: path, HeadEvery: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	require.True(t, l.Enqueue(reject(0)))
	waitFor(t, func() bool { return strings.Contains(out.String(), "msg=\"audit head\" seq=2 ") }, "the head is logged")
	require.NoError(t, l.Close())
	recs := readRecords(t, path)
	require.Contains(t, out.String(), fmt.Sprintf("msg=\"audit log closed\" seq=2 mac=%x", recs[1].MAC))
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A key file group or others may read is warned about at Open, with its
// mode; a 0600 one is not.
func TestKeyFileExposedWarns(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "audit.key")
	require.NoError(t, os.WriteFile(key, testKey, 0o600))
	for _, c := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o400, false}, {0o640, true}, {0o604, true}, {0o644, true}} {
		require.NoError(t, os.Chmod(key, c.mode))
		var logs bytes.Buffer
		l, err := Open(Options{Path: filepath.Join(dir, fmt.Sprintf("audit-%o.log", c.mode)), Key: testKey, KeyFile: key,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		require.NoError(t, l.Close())
		if c.warn {
			require.Contains(t, logs.String(), "level=WARN msg=\"audit key file is readable by group or others", "mode %o", c.mode)
			require.Contains(t, logs.String(), fmt.Sprintf("mode=%#o", c.mode))
		} else {
			require.NotContains(t, logs.String(), "level=WARN", "mode %o", c.mode)
		}
	}
}

// A segment that is empty (its segment record never written) continues
// from the previous segment's last record, which must be complete: when
// the previous segment ends in a torn record, Open refuses to continue the
// chain rather than fork it from an earlier record, and changes nothing.
func TestLogTornPreviousSegmentRefused(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path, SegmentBytes: 1000})
	for i := range 4 {
		l.Enqueue(reject(i))
	}
	require.NoError(t, l.Close())
	segs, err := Segments(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(segs), 2)
	last, prev := segs[len(segs)-1], segs[len(segs)-2]
	require.NoError(t, os.WriteFile(last, nil, 0o640))
	data, err := os.ReadFile(prev)
	require.NoError(t, err)
	torn := append(data, `{"v":1,"seq":`...)
	require.NoError(t, os.WriteFile(prev, torn, 0o640))

	_, err = Open(Options{Path: path, Key: testKey, SegmentBytes: 1000})
	require.ErrorContains(t, err, prev+": does not end with a complete record")
	after, err := os.ReadFile(prev)
	require.NoError(t, err)
	require.Equal(t, torn, after, "the previous segment is left as it is")
	fi, err := os.Stat(last)
	require.NoError(t, err)
	require.Zero(t, fi.Size())
}

// syncDirFault makes syncDir fail while armed, and counts the failures.
type syncDirFault struct {
	armed    atomic.Bool
	failures atomic.Int64
}

func failSyncDir(t *testing.T) *syncDirFault {
	f := &syncDirFault{}
	orig := syncDir
	syncDir = func(path string) error {
		if f.armed.Load() {
			f.failures.Add(1)
			return errors.New("injected directory fsync failure")
		}
		return orig(path)
	}
	t.Cleanup(func() { syncDir = orig })
	return f
}

// A failed directory fsync closes the file it was for: a new log's first
// segment (Open fails, and a second Open can lock it), and a new segment
// at rotation (the writer reopens the log on the new segment and goes on).
// A file left open keeps its lock: the second Open, or the writer's
// reopen, fails for ever.
func TestLogDirSyncFailureClosesTheFile(t *testing.T) {
	fault := failSyncDir(t)
	path := logPath(t)
	fault.armed.Store(true)
	_, err := Open(Options{Path: path, Key: testKey})
	require.ErrorContains(t, err, "injected directory fsync failure")
	fault.armed.Store(false)
	l := openLog(t, Options{Path: path})
	require.NoError(t, l.Close())

	path = logPath(t)
	var m testMeters
	l = openLog(t, Options{Path: path, SegmentBytes: 1000, Meters: m.meters()})
	fault.armed.Store(true)
	fault.failures.Store(0)
	// One record at a time until the segment is full (1000 bytes) and the
	// writer begins a new one.
	for i := 0; fault.failures.Load() == 0; i++ {
		require.Less(t, i, 20, "no rotation")
		before := m.written.get()
		require.True(t, l.Enqueue(reject(i)))
		waitFor(t, func() bool { return m.written.get() > before }, "written")
	}
	fault.armed.Store(false)
	written := m.written.get()
	require.True(t, l.Enqueue(reject(99)))
	waitFor(t, func() bool { return m.written.get() > written }, "the writer reopens the log and writes again")
	require.NoError(t, l.Close())
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, sum.Segments, 2, "the new segment is in use")
	segs, err := Segments(path)
	require.NoError(t, err)
	var last Record
	for _, r := range readRecords(t, segs...) {
		if r.Kind == KindReject {
			last = r
		}
	}
	require.Equal(t, "req-99", last.ReqID)
}

// A segment longer than the chunk read to find its last record reopens
// like a short one: no torn tail is seen, nothing is truncated.
func TestLogReopenLongSegment(t *testing.T) {
	path := logPath(t)
	l := openLog(t, Options{Path: path})
	for i := 0; ; i++ {
		r := reject(i)
		r.Reason = strings.Repeat("r", MaxReason)
		require.True(t, l.Enqueue(r))
		if i%64 == 63 {
			require.NoError(t, l.Close())
			fi, err := os.Stat(path)
			require.NoError(t, err)
			if fi.Size() > tailChunk {
				break
			}
			l = openLog(t, Options{Path: path})
		}
	}
	var m testMeters
	l = openLog(t, Options{Path: path, Meters: m.meters()})
	require.True(t, l.Enqueue(reject(-1)))
	require.NoError(t, l.Close())
	require.Zero(t, m.recovered.get())
	sum, err := VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
	require.Zero(t, sum.Recoveries)
	require.Equal(t, 1, sum.Segments)
}
