package capture

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bidguard/bidguard/jsonraw"
)

// retryEvery is how long the writer waits after a failed open or write
// before it tries the file again; the records in between are counted as
// failed.
var retryEvery = time.Second

// maxBatch bounds the bytes encoded before one write(2).
const maxBatch = 1 << 20

// Writer writes submitted entries as records, on its own goroutine, to a
// rotated set of files. Acquire and Submit are safe for concurrent use and
// never block; Close stops the writer.
type Writer struct {
	opt    Options
	m      Meters
	log    *slog.Logger
	red    *Redactor
	q      chan *Entry
	queued atomic.Int64 // bytes of the entries in q
	closed atomic.Bool
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	// The writer goroutine's own.
	f        *os.File
	size     int64 // bytes in f
	seq      int   // the newest rotated file's number
	failing  bool  // in a spell of failures (logged once)
	retryAt  time.Time
	batch    []byte
	nBatch   int // records in batch
	closeErr error
}

// New starts a Writer. The file is opened when the first record is
// written: a path that cannot be written is a failure counted and logged
// then, never an error here.
func New(opt Options) *Writer {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.MaxFiles <= 0 {
		opt.MaxFiles = DefaultMaxFiles
	}
	if opt.QueueBytes <= 0 {
		opt.QueueBytes = DefaultQueueBytes
	}
	if opt.QueueEntries <= 0 {
		opt.QueueEntries = DefaultQueueEntries
	}
	w := &Writer{opt: opt, m: opt.Meters, log: opt.Logger, red: NewRedactor(opt.Redact),
		q: make(chan *Entry, opt.QueueEntries), stop: make(chan struct{}), done: make(chan struct{})}
	w.m.fill()
	if w.log == nil {
		w.log = slog.Default()
	}
	go w.run()
	return w
}

// Acquire returns an empty Entry from the pool, or nil, counted as
// dropped, when the queue is full or the Writer closed: a writer that is
// behind costs the bid path no copy.
func (w *Writer) Acquire() *Entry {
	if w.closed.Load() || len(w.q) == cap(w.q) || w.queued.Load() >= w.opt.QueueBytes {
		w.m.Dropped.Add(1)
		return nil
	}
	return acquireEntry()
}

// Submit queues e for writing and reports whether it was queued: false when
// the queue is full (by count or bytes) or the Writer is closed, and then e
// is dropped and counted. It never blocks. e belongs to the Writer from now
// on, in both cases.
func (w *Writer) Submit(e *Entry) bool {
	e.finish()
	n := e.size()
	if w.closed.Load() || w.queued.Add(n) > w.opt.QueueBytes {
		w.queued.Add(-n)
		w.drop(e)
		return false
	}
	select {
	case w.q <- e:
		return true
	default:
		w.queued.Add(-n)
		w.drop(e)
		return false
	}
}

func (w *Writer) drop(e *Entry) {
	releaseEntry(e)
	w.m.Dropped.Add(1)
}

// Close writes what is queued, closes the file and stops the writer. Entries
// submitted after Close are dropped. It returns the error of closing the
// file.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.closed.Store(true)
		close(w.stop)
	})
	<-w.done
	return w.closeErr
}

// drainEvery is how often the writer takes what is queued. It polls
// rather than waits on the queue, so that a Submit never has to wake it:
// the bid path's cost is the copy alone. With DefaultQueueEntries it
// takes up to about 100,000 records a second before the queue fills.
const drainEvery = 10 * time.Millisecond

func (w *Writer) run() {
	defer close(w.done)
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.drain()
		case <-w.stop:
			w.drain()
			if w.f != nil {
				w.closeErr = w.f.Close()
				w.f = nil
			}
			return
		}
	}
}

// drain adds what is queued without waiting, then writes the batch.
func (w *Writer) drain() {
	for {
		select {
		case e := <-w.q:
			w.add(e)
			continue
		default:
		}
		break
	}
	w.flush()
}

// add encodes e into the batch. A record that would take the file past
// MaxBytes first writes the batch and rotates: it begins the next file.
func (w *Writer) add(e *Entry) {
	w.queued.Add(-e.size())
	if w.f == nil && !w.open() {
		releaseEntry(e)
		w.m.Failed.Add(1)
		return
	}
	mark := len(w.batch)
	w.batch = w.encode(w.batch, e)
	releaseEntry(e)
	if w.size+int64(mark) > 0 && w.size+int64(len(w.batch)) > w.opt.MaxBytes {
		line := w.batch[mark:]
		w.batch = w.batch[:mark]
		w.flush()
		w.rotate()
		if w.f == nil && !w.open() {
			w.m.Failed.Add(1)
			return
		}
		// line lies past the batch's end: nothing has written over it.
		w.batch = append(w.batch[:0], line...)
	}
	w.nBatch++
	if len(w.batch) >= maxBatch {
		w.flush()
	}
}

// encode appends e's record line.
func (w *Writer) encode(b []byte, e *Entry) []byte {
	b = append(b, `{"time":"`...)
	b = e.Arrival.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","upstream":`...)
	b = jsonraw.AppendString(b, e.Upstream)
	b = append(b, `,"latencyMs":`...)
	b = strconv.AppendFloat(b, e.LatencyMs, 'f', -1, 64)
	b = append(b, `,"request":`...)
	b = w.red.Append(b, e.Request)
	b = append(b, `,"response":`...)
	start := len(b)
	b = append(b, e.Response...)
	oneLine(b[start:])
	b = append(b, `,"verdict":`...)
	b = append(b, e.verdict...)
	return append(b, "}\n"...)
}

// flush writes the batch. A failure counts the batch's records as failed
// and closes the file, which the next record tries to open again.
func (w *Writer) flush() {
	if w.nBatch == 0 {
		return
	}
	n := w.nBatch
	b := w.batch
	w.batch, w.nBatch = w.batch[:0], 0
	if w.f == nil {
		w.m.Failed.Add(n)
		return
	}
	if _, err := w.f.Write(b); err != nil {
		// A torn line would spoil the next record too: cut it off.
		_ = w.f.Truncate(w.size)
		_ = w.f.Close()
		w.f = nil
		w.fail("capture file not written", err)
		w.m.Failed.Add(n)
		return
	}
	w.size += int64(len(b))
	if w.failing {
		w.failing = false
		w.log.Info("capture file written again", "path", w.opt.Path)
	}
	w.m.Written.Add(n)
	w.m.Bytes.Add(len(b))
	if cap(w.batch) > 4*maxBatch {
		w.batch = nil
	}
}

// open opens (or creates) Path for appending; false after a failure, and
// during retryEvery after one.
func (w *Writer) open() bool {
	if w.failing && time.Now().Before(w.retryAt) {
		return false
	}
	f, size, err := openAppend(w.opt.Path)
	if err != nil {
		w.fail("capture file not opened", err)
		return false
	}
	w.f, w.size = f, size
	w.seq = newestRotated(w.opt.Path)
	return true
}

// openAppend opens path for appending and returns its size. A file whose
// last line was torn (a crash) gets a line break first, so the next record
// starts a line.
func openAppend(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	size := st.Size()
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil && !errors.Is(err, io.EOF) {
			_ = f.Close()
			return nil, 0, err
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				_ = f.Close()
				return nil, 0, err
			}
			size++
		}
	}
	return f, size, nil
}

func (w *Writer) fail(msg string, err error) {
	w.retryAt = time.Now().Add(retryEvery)
	if !w.failing {
		w.failing = true
		w.log.Error(msg+": records are counted as failed until it works again", "path", w.opt.Path, "error", err)
	}
}

// rotate renames the file to the next "<path>.<n>" and deletes the oldest
// rotated files beyond MaxFiles. The next flush opens a new file.
func (w *Writer) rotate() {
	if w.f == nil {
		return
	}
	if err := w.f.Close(); err != nil {
		w.fail("capture file not closed", err)
	}
	w.f, w.size = nil, 0
	w.seq++
	if err := os.Rename(w.opt.Path, RotatedName(w.opt.Path, w.seq)); err != nil {
		w.fail("capture file not rotated", err)
		return
	}
	w.m.Rotated.Add(1)
	rotated := rotatedFiles(w.opt.Path)
	for len(rotated) > w.opt.MaxFiles-1 {
		if err := os.Remove(RotatedName(w.opt.Path, rotated[0])); err != nil {
			w.log.Warn("old capture file not deleted", "error", err)
		}
		rotated = rotated[1:]
	}
}

// RotatedName is the name of rotated file n of path.
func RotatedName(path string, n int) string { return fmt.Sprintf("%s.%06d", path, n) }

// rotatedFiles are the numbers of path's rotated files, oldest first.
func rotatedFiles(path string) []int {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ns []int
	for _, e := range ents {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || len(suffix) < 6 {
			continue
		}
		if n, err := strconv.Atoi(suffix); err == nil && n > 0 {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// newestRotated is the largest rotated number of path, 0 without one.
func newestRotated(path string) int {
	ns := rotatedFiles(path)
	if len(ns) == 0 {
		return 0
	}
	return ns[len(ns)-1]
}
