package audit

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fsyncWatch replaces the writer's fsync: it records, for each fsync begun
// after Open returned, when it began and how many records were written by
// then.
type fsyncWatch struct {
	m       *testMeters
	mu      sync.Mutex
	ready   bool
	written []int64
	at      []time.Time
}

func (s *fsyncWatch) fsync(f *os.File) error {
	s.mu.Lock()
	if s.ready {
		s.written = append(s.written, s.m.written.get())
		s.at = append(s.at, time.Now())
	}
	s.mu.Unlock()
	return f.Sync()
}

func (s *fsyncWatch) start() {
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
}

func (s *fsyncWatch) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.written)
}

func (s *fsyncWatch) call(i int) (int64, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[i], s.at[i]
}

func openWatched(t *testing.T, opt Options) (*Log, *fsyncWatch, int64) {
	t.Helper()
	w := &fsyncWatch{m: &testMeters{}}
	opt.Meters, opt.fsync = w.m.meters(), w.fsync
	l := openLog(t, opt)
	w.start()
	return l, w, w.m.written.get() // Open's own records (the segment record)
}

// A lone record is fsynced once syncAfter has passed since it was written,
// not sooner (fewer than FsyncEvery records: the count does not start
// one), and not later than that for a head logged seldom: the writer wakes
// for the fsync, not for the head.
func TestLogFsyncLoneRecordAfterSyncAfter(t *testing.T) {
	l, w, base := openWatched(t, Options{Path: logPath(t), HeadEvery: time.Hour})
	before := time.Now()
	require.True(t, l.Enqueue(reject(0)))
	waitFor(t, func() bool { return w.calls() > 0 }, "the record is fsynced")
	written, at := w.call(0)
	require.Equal(t, base+1, written)
	require.GreaterOrEqual(t, at.Sub(before), syncAfter, "an fsync began before syncAfter with 1 record of FsyncEvery written")
	require.NoError(t, l.Close())
}

// FsyncEvery records written start an fsync at once; fewer do not (the
// time trigger is set out of reach here).
func TestLogFsyncEveryCount(t *testing.T) {
	l, w, base := openWatched(t, Options{Path: logPath(t), FsyncEvery: 4, syncAfter: time.Hour})
	for i := range 4 {
		require.True(t, l.Enqueue(reject(i)))
		waitFor(t, func() bool { return w.m.written.get() == base+int64(i)+1 }, "written")
		if i < 3 {
			require.Zero(t, w.calls(), "an fsync began after %d records of 4", i+1)
		}
	}
	waitFor(t, func() bool { return w.calls() > 0 }, "4 records start an fsync")
	written, _ := w.call(0)
	require.Equal(t, base+4, written)
	require.NoError(t, l.Close())
	require.Equal(t, 2, w.calls(), "and Close one more")
}

// An idle writer fsyncs nothing more once what it wrote is synced, and
// still logs the head every HeadEvery.
func TestLogIdleWriterHeadsWithoutFsync(t *testing.T) {
	var out syncBuf
	l, w, _ := openWatched(t, Options{Path: logPath(t), HeadEvery: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	require.True(t, l.Enqueue(reject(0)))
	waitFor(t, func() bool { return w.calls() > 0 }, "the record is fsynced")
	heads := func() int { return strings.Count(out.String(), `msg="audit head"`) }
	after := heads()
	waitFor(t, func() bool { return heads() >= after+3 }, "heads go on while idle")
	require.Equal(t, 1, w.calls(), "an idle writer began an fsync with nothing written")
	require.NoError(t, l.Close())
}

// A failed fsync: at Open, Open fails and closes the segment (a second
// Open can lock it); in the writer, it is logged (what it covered may not
// be durable) and the writer goes on.
func TestLogFsyncFailure(t *testing.T) {
	var armed atomic.Bool
	failing := func(f *os.File) error {
		if armed.Load() {
			return errors.New("injected fsync failure")
		}
		return f.Sync()
	}
	path := logPath(t)
	armed.Store(true)
	_, err := Open(Options{Path: path, Key: testKey, fsync: failing})
	require.ErrorContains(t, err, "injected fsync failure")
	armed.Store(false)
	l := openLog(t, Options{Path: path})
	require.NoError(t, l.Close())

	var out syncBuf
	var m testMeters
	l = openLog(t, Options{Path: path, fsync: failing, Meters: m.meters(), Logger: slog.New(slog.NewTextHandler(&out, nil))})
	armed.Store(true)
	require.True(t, l.Enqueue(reject(0)))
	waitFor(t, func() bool { return strings.Contains(out.String(), "fsync failed") }, "the failed fsync is logged")
	armed.Store(false)
	written := m.written.get()
	require.True(t, l.Enqueue(reject(1)))
	waitFor(t, func() bool { return m.written.get() > written }, "the writer goes on")
	require.NoError(t, l.Close())
	_, err = VerifyFiles([]string{path}, testKey, nil)
	require.NoError(t, err)
}
