package audit

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options, those of the config's audit block.
const (
	DefaultFsyncEvery   = 64
	DefaultSegmentBytes = 64 << 20
	DefaultQueue        = 65536
)

// Timing of the writer.
const (
	// syncAfter is the longest a written record waits for an fsync to begin
	// (when none is in flight).
	syncAfter = 100 * time.Millisecond
	// retryAfter is how long a writer that failed to write waits before it
	// reopens the log and tries again.
	retryAfter = 250 * time.Millisecond
	// maxBatch bounds the records encoded before one write(2).
	maxBatch = 1024
)

// Counter is what the log counts with; *metrics.Counter of
// VictoriaMetrics/metrics is one.
type Counter interface{ Add(n int) }

// Meters are the counters a Log updates. Nil fields are not counted.
type Meters struct {
	Written   Counter // records handed to write(2), of every kind
	Dropped   Counter // records not written: a full queue, a failed write
	Gap       Counter // gap records written
	Recovered Counter // recovered records written
	Panics    Counter // panics recovered in the writer
}

type noCounter struct{}

func (noCounter) Add(int) {}

// Options configure a Log.
type Options struct {
	// Path is the first segment file; later segments are SegmentName(Path, n).
	Path string
	// Key is the HMAC-SHA256 key; empty means plain SHA-256.
	Key []byte
	// KeyFile is the file Key was read from, if any: Open warns when
	// group or others may read it (KeyFileExposed).
	KeyFile string
	// FsyncEvery is the number of written records after which an fsync
	// begins (one also begins 100 ms after a write); at most one is in
	// flight.
	FsyncEvery int
	// SegmentBytes is the size at which a segment is closed and the next one
	// begins.
	SegmentBytes int64
	// Queue is the number of records Enqueue holds before it drops.
	Queue int
	// Wait makes Open wait while another process holds the log (check);
	// without it Open fails at once (serve).
	Wait bool
	// HeadEvery, when > 0, logs the chain head (seq, mac) that often, for
	// shipping to a log system; the head is also logged at Close.
	HeadEvery time.Duration
	Meters    Meters
	// Logger receives the writer's errors (at most one a second) and the
	// chain head. Nil means slog.Default().
	Logger *slog.Logger

	// fsync and syncAfter, when set (by tests), replace (*os.File).Sync
	// and the syncAfter constant for the writer's fsyncs: tests see when it
	// syncs, and make it sync on the count alone or fail.
	fsync     func(*os.File) error
	syncAfter time.Duration
}

// Log is an open audit log: a hash chain of records in segment files, owned
// by one writer goroutine. Enqueue, Append and Close are safe for
// concurrent use.
type Log struct {
	opt     Options
	m       Meters
	log     *slog.Logger
	q       *ring
	dropped atomic.Uint64 // records dropped and not yet in a gap record

	sleeping atomic.Bool // the writer waits for wake
	wake     chan struct{}
	closed   atomic.Bool
	closing  chan struct{}
	once     sync.Once
	done     chan struct{}

	ctlMu sync.Mutex
	ctl   []Record

	// fsync runs on its own goroutine, so writes go on while the disk syncs.
	syncReq  chan *os.File
	syncDone chan syncResult

	w writer
}

type syncResult struct {
	f   *os.File
	err error
}

// writer is the writer goroutine's state (Open's before it starts).
type writer struct {
	f    *os.File // nil: closed after a failure, reopened at the next step
	seg  int
	size int64 // bytes in the segment file
	seq  uint64
	prev [32]byte
	mac  *macer
	buf  []byte
	rec  Record
	doms []string
	ctl  []Record // taken from Log.ctl

	// Since the last write: what buf holds.
	held      uint64 // ring slots encoded into buf
	producers int    // producer records in buf (slots and control records)
	records   int    // records in buf
	gaps      int    // gap records in buf
	recovered int    // recovered records in buf
	gapCount  uint64 // drops buf's gap record covers

	pendingGap    uint64    // drops not yet in a written gap record
	unsynced      int       // records written and not covered by an fsync begun since
	firstUnsynced time.Time // when the oldest of them was written
	syncing       bool      // an fsync is in flight
	lastHead      time.Time
	lastErrLog    time.Time
	notWritten    uint64 // producer records this log could not write
	lastErr       error
}

// Errors of Append and Close.
var (
	ErrClosed = errors.New("audit: log closed")
	errKind   = errors.New("audit: kind is made by the writer")
)

// Open opens the log at opt.Path, creating its first segment, or recovering
// the newest one: a torn tail (bytes after the last line end) is truncated
// and recorded as a recovered record, and the chain continues from the last
// record, whose MAC must verify with opt.Key. What Open writes is durable
// when it returns. The writer goroutine runs until Close.
func Open(opt Options) (*Log, error) {
	if opt.Path == "" {
		return nil, errors.New("audit: no path")
	}
	if opt.FsyncEvery <= 0 {
		opt.FsyncEvery = DefaultFsyncEvery
	}
	if opt.SegmentBytes <= 0 {
		opt.SegmentBytes = DefaultSegmentBytes
	}
	if opt.Queue <= 0 {
		opt.Queue = DefaultQueue
	}
	if opt.fsync == nil {
		opt.fsync = (*os.File).Sync
	}
	if opt.syncAfter <= 0 {
		opt.syncAfter = syncAfter
	}
	l := &Log{
		opt:      opt,
		m:        opt.Meters,
		log:      opt.Logger,
		q:        newRing(opt.Queue),
		wake:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
		syncReq:  make(chan *os.File, 1),
		syncDone: make(chan syncResult, 1),
	}
	for _, c := range []*Counter{&l.m.Written, &l.m.Dropped, &l.m.Gap, &l.m.Recovered, &l.m.Panics} {
		if *c == nil {
			*c = noCounter{}
		}
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if opt.KeyFile != "" {
		if mode, exposed := KeyFileExposed(opt.KeyFile); exposed {
			l.log.Warn("audit key file is readable by group or others: anyone who reads it can forge the chain; chmod 600 it",
				"file", opt.KeyFile, "mode", fmt.Sprintf("%#o", mode))
		}
	}
	l.w.mac = newMacer(opt.Key)
	if err := l.reopen(); err != nil {
		return nil, err
	}
	if err := l.flush(); err != nil {
		l.w.f.Close()
		return nil, fmt.Errorf("audit: %s: %w", l.segName(), err)
	}
	if err := l.syncNow(); err != nil {
		l.w.f.Close()
		return nil, fmt.Errorf("audit: %s: %w", l.segName(), err)
	}
	l.w.lastHead = time.Now()
	go l.syncer()
	go l.run()
	return l, nil
}

// Enqueue hands a record of the bid path to the writer without blocking:
// its content is copied (strings clipped to the field limits) and the
// caller keeps r. TS is set to now when zero. When the queue is full, or
// the log is closed, the record is dropped and counted, and a gap record
// with the exact number of dropped records follows in the chain. It
// allocates nothing once the queue's slots are warm.
func (l *Log) Enqueue(r *Record) bool {
	ok := !l.closed.Load() && producerKind(r.Kind) && l.q.push(r, time.Now().UnixNano())
	if !ok {
		l.dropped.Add(1)
		l.m.Dropped.Add(1)
	}
	l.signal() // a drop too: its gap record is due
	return ok
}

// Append hands a control record (config, quarantine, release) to the
// writer. It is never dropped for lack of room: it waits in a list the
// writer takes before the queue. It does not wait for the write.
func (l *Log) Append(r *Record) error {
	if !producerKind(r.Kind) {
		return errKind
	}
	c := copyRecord(r, time.Now())
	l.ctlMu.Lock()
	if l.closed.Load() {
		l.ctlMu.Unlock()
		return ErrClosed
	}
	l.ctl = append(l.ctl, c)
	l.ctlMu.Unlock()
	l.signal()
	return nil
}

// signal wakes the writer when it sleeps; the common case under load, a
// busy writer, costs one atomic load.
func (l *Log) signal() {
	if l.sleeping.Load() && l.sleeping.CompareAndSwap(true, false) {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Close writes what was handed in before it, fsyncs, closes the segment
// and stops the writer. Records enqueued concurrently with Close may be
// dropped. The error says whether any record handed to this log was not
// written.
func (l *Log) Close() error {
	l.once.Do(func() {
		l.ctlMu.Lock()
		l.closed.Store(true)
		l.ctlMu.Unlock()
		close(l.closing)
	})
	<-l.done
	if l.w.notWritten > 0 {
		return fmt.Errorf("audit: %d records not written (last error: %v)", l.w.notWritten, l.w.lastErr)
	}
	return nil
}

// syncer runs the fsyncs the writer starts.
func (l *Log) syncer() {
	for f := range l.syncReq {
		l.syncDone <- syncResult{f, l.opt.fsync(f)}
	}
}

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	defer close(l.syncReq)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.step()
		closing := l.closed.Load()
		if l.w.f == nil { // the step failed: try again after a pause, or give up at Close
			if closing {
				l.abandon()
				return
			}
			l.sleep(timer, retryAfter)
			continue
		}
		if l.busy() {
			continue
		}
		if closing {
			l.finish()
			return
		}
		l.sleeping.Store(true)
		if l.busy() {
			l.sleeping.Store(false)
			continue
		}
		wait := time.Duration(-1)
		if l.w.unsynced > 0 && !l.w.syncing {
			wait = max(l.opt.syncAfter-time.Since(l.w.firstUnsynced), 0)
		}
		if l.opt.HeadEvery > 0 {
			h := max(l.opt.HeadEvery-time.Since(l.w.lastHead), 0)
			if wait < 0 || h < wait {
				wait = h
			}
		}
		l.sleep(timer, wait)
		l.sleeping.Store(false)
	}
}

// sleep waits for a signal, Close, or d (forever when d < 0).
func (l *Log) sleep(timer *time.Timer, d time.Duration) {
	var tc <-chan time.Time
	if d >= 0 {
		timer.Reset(d)
		tc = timer.C
	}
	select {
	case <-l.wake:
	case <-tc:
	case <-l.closing:
	case res := <-l.syncDone:
		l.synced(res)
	}
	timer.Stop()
}

// busy reports whether there is something to write.
func (l *Log) busy() bool {
	if l.q.peek(0) != nil || l.dropped.Load() > 0 || l.w.pendingGap > 0 {
		return true
	}
	l.ctlMu.Lock()
	n := len(l.ctl)
	l.ctlMu.Unlock()
	return n > 0
}

// step writes one batch: a gap record for the drops seen so far, the
// control records, then up to maxBatch queued records; then starts an
// fsync and logs the head when due. A panic is recovered and counted: what the batch
// held that was not written is counted as dropped, and the log is reopened
// from the file (so the chain continues from what is really there).
func (l *Log) step() {
	defer func() {
		if r := recover(); r != nil {
			l.m.Panics.Add(1)
			l.fail(fmt.Errorf("panic: %v", r), "stack", string(debug.Stack()))
		}
	}()
	w := &l.w
	select {
	case res := <-l.syncDone:
		l.synced(res)
	default:
	}
	if w.f == nil {
		if err := l.reopen(); err != nil {
			l.fail(err)
			return
		}
	}
	if n := l.dropped.Swap(0); n > 0 {
		w.pendingGap += n
	}
	if w.pendingGap > 0 {
		w.gaps++
		w.gapCount = w.pendingGap
		if err := l.add(&Record{TS: time.Now(), Kind: KindGap, Reason: strconv.FormatUint(w.pendingGap, 10) + gapSuffix}); err != nil {
			l.fail(err)
			return
		}
	}
	l.ctlMu.Lock()
	w.ctl, l.ctl = l.ctl, w.ctl[:0]
	l.ctlMu.Unlock()
	for i := range w.ctl {
		w.producers++
		if err := l.add(&w.ctl[i]); err != nil {
			l.fail(err)
			return
		}
	}
	clear(w.ctl)
	w.ctl = w.ctl[:0]
	for k := uint64(0); k < maxBatch; k++ {
		s := l.q.peek(w.held)
		if s == nil {
			break
		}
		w.held++
		w.producers++
		w.doms = s.record(&w.rec, w.doms)
		if err := l.add(&w.rec); err != nil {
			l.fail(err)
			return
		}
	}
	if err := l.flush(); err != nil {
		l.fail(err)
		return
	}
	if w.unsynced > 0 && !w.syncing && (w.unsynced >= l.opt.FsyncEvery || time.Since(w.firstUnsynced) >= l.opt.syncAfter) {
		w.syncing, w.unsynced = true, 0
		l.syncReq <- w.f // never blocks: at most one fsync is in flight
	}
	if l.opt.HeadEvery > 0 && time.Since(w.lastHead) >= l.opt.HeadEvery {
		l.logHead("audit head")
	}
}

// Reasons of writer records: a gap's reason is "<n> records dropped", a
// recovered record's "<n> bytes truncated", a segment record's the segment
// number.
const (
	gapSuffix       = " records dropped"
	recoveredSuffix = " bytes truncated"
)

// add seals a record into the batch and rotates the segment when it is
// full.
func (l *Log) add(r *Record) error {
	validUTF8(r)
	l.w.seal(r)
	if l.w.size+int64(len(l.w.buf)) >= l.opt.SegmentBytes {
		return l.rotate()
	}
	return nil
}

// seal gives r its place in the chain and encodes it into the batch.
func (w *writer) seal(r *Record) {
	r.V, r.Seq, r.Prev = Version, w.seq+1, w.prev
	r.MAC = w.mac.sum(r)
	w.buf = appendLine(w.buf, r)
	w.seq, w.prev = r.Seq, r.MAC
	w.records++
}

// flush hands the batch to write(2). On success the batch's slots are
// freed and its records counted as written.
func (l *Log) flush() error {
	w := &l.w
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.Write(w.buf)
	if err != nil {
		if n > 0 {
			// Cut the partial batch so the file ends at a line end again.
			if terr := w.f.Truncate(w.size); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		return err
	}
	w.size += int64(n)
	held, records, gaps, recovered := w.held, w.records, w.gaps, w.recovered
	if gaps > 0 {
		w.pendingGap -= w.gapCount
	}
	w.buf = w.buf[:0]
	w.held, w.producers, w.records, w.gaps, w.recovered, w.gapCount = 0, 0, 0, 0, 0, 0
	if w.unsynced == 0 {
		w.firstUnsynced = time.Now()
	}
	w.unsynced += records
	// The slots are freed after the records are counted as written (even if
	// a counter panics): at every instant, records accepted by Enqueue are
	// counted as written or still hold a slot.
	defer l.q.release(held)
	l.m.Written.Add(records)
	l.m.Gap.Add(gaps)
	l.m.Recovered.Add(recovered)
	return nil
}

// synced takes the result of an fsync the writer started. A failed fsync
// of the current segment is logged: what it covered may not be durable.
func (l *Log) synced(res syncResult) {
	w := &l.w
	w.syncing = false
	if res.err != nil && res.f == w.f {
		w.lastErr = res.err
		l.logError("audit log: fsync failed; written records may not be durable", res.err)
	}
}

// syncNow waits for the fsync in flight, then fsyncs the segment.
func (l *Log) syncNow() error {
	w := &l.w
	if w.syncing {
		l.synced(<-l.syncDone)
	}
	if err := l.opt.fsync(w.f); err != nil {
		return err
	}
	w.unsynced = 0
	return nil
}

// fail drops what the batch held (counted, and covered by the next gap
// record), closes the segment so the next step reopens the log from the
// file, and logs the error at most once a second.
func (l *Log) fail(err error, args ...any) {
	w := &l.w
	lost := uint64(w.producers)
	l.q.release(w.held)
	w.buf = w.buf[:0]
	w.held, w.producers, w.records, w.gaps, w.recovered, w.gapCount = 0, 0, 0, 0, 0, 0
	clear(w.ctl)
	w.ctl = w.ctl[:0]
	w.pendingGap += lost
	w.notWritten += lost
	w.lastErr = err
	l.m.Dropped.Add(int(lost))
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	l.logError("audit log cannot write; records are dropped and counted", err, args...)
}

// logError logs at most once a second.
func (l *Log) logError(msg string, err error, args ...any) {
	if time.Since(l.w.lastErrLog) >= time.Second {
		l.w.lastErrLog = time.Now()
		l.log.Error(msg, append([]any{"error", err, "path", l.opt.Path}, args...)...)
	}
}

// abandon ends a writer that cannot write at Close: what is queued is
// counted as not written.
func (l *Log) abandon() {
	w := &l.w
	if w.syncing {
		l.synced(<-l.syncDone)
	}
	var n uint64
	for l.q.peek(n) != nil {
		n++
	}
	l.q.release(n)
	l.ctlMu.Lock()
	n += uint64(len(l.ctl))
	l.ctl = nil
	l.ctlMu.Unlock()
	n += l.dropped.Swap(0)
	w.notWritten += n
	l.m.Dropped.Add(int(n))
}

// finish fsyncs and closes the segment at Close.
func (l *Log) finish() {
	w := &l.w
	if err := l.syncNow(); err != nil {
		w.lastErr = err
		l.log.Error("audit log: fsync at close", "error", err, "path", l.segName())
	}
	l.logHead("audit log closed")
	w.f.Close()
	w.f = nil
}

func (l *Log) logHead(msg string) {
	l.w.lastHead = time.Now()
	l.log.Info(msg, "seq", l.w.seq, "mac", fmt.Sprintf("%x", l.w.prev), "segment", l.segName())
}

func (l *Log) segName() string { return SegmentName(l.opt.Path, l.w.seg) }
