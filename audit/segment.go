package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Segment files: the first is the configured path itself; segment n ≥ 2 is
// "<path>.<n>" with n zero-padded to six digits (audit.log, audit.log.000002,
// audit.log.000003, ...), so a shell glob lists them in order. Files are
// never renamed: a crash can leave at most the newest one incomplete.

// SegmentName returns the file name of segment n of the log at path.
func SegmentName(path string, n int) string {
	if n <= 1 {
		return path
	}
	return fmt.Sprintf("%s.%06d", path, n)
}

// segmentNumber returns n when name is segment n ≥ 2 of base, else 0.
func segmentNumber(base, name string) int {
	rest, ok := strings.CutPrefix(name, base+".")
	if !ok || len(rest) < 6 {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 2 || rest != fmt.Sprintf("%06d", n) {
		return 0
	}
	return n
}

// Segments lists the existing segment files of the log at path, in order.
func Segments(path string) ([]string, error) {
	nums, err := segmentNumbers(path)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = SegmentName(path, n)
	}
	return out, nil
}

// segmentNumbers lists the numbers of the existing segments, ascending.
func segmentNumbers(path string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	var nums []int
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch n := segmentNumber(base, e.Name()); {
		case e.Name() == base:
			nums = append(nums, 1)
		case n > 0:
			nums = append(nums, n)
		}
	}
	slices.Sort(nums) // past 999999 the names no longer sort as numbers
	return nums, nil
}

// tailChunk is how much of a segment's end is read to find its last
// record: two of the longest lines.
const tailChunk = 2 * maxLine

// segmentTail reads the end of a segment: the last complete line (nil when
// there is none) and the number of bytes after it (a torn tail).
func segmentTail(f *os.File, size int64) (last []byte, torn int64, err error) {
	off := max(size-tailChunk, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if off > 0 {
			return nil, 0, fmt.Errorf("no line end in the last %d bytes", len(buf))
		}
		return nil, size, nil
	}
	torn = int64(len(buf) - end - 1)
	start := bytes.LastIndexByte(buf[:end], '\n') + 1
	if start == 0 && off > 0 {
		return nil, 0, fmt.Errorf("last line longer than %d bytes", maxLine)
	}
	return buf[start : end+1], torn, nil
}

// syncDir makes a new file's directory entry durable. A variable: tests
// make it fail.
var syncDir = func(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// reopen opens the newest segment for appending (creating the first one
// for a new log), takes the lock, recovers a torn tail and loads the chain
// head. What it has to write (a segment record for an empty segment, a
// recovered record) is sealed into the batch.
func (l *Log) reopen() error {
	path := l.opt.Path
	for attempt := 0; ; attempt++ {
		nums, err := segmentNumbers(path)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		n := 1
		if len(nums) > 0 {
			n = nums[len(nums)-1]
		}
		name := SegmentName(path, n)
		flags := os.O_RDWR | os.O_APPEND
		if len(nums) == 0 {
			flags |= os.O_CREATE | os.O_EXCL
		}
		f, err := os.OpenFile(name, flags, 0o640)
		if errors.Is(err, fs.ErrExist) && attempt < 3 {
			continue // another process created it: lock it like any segment
		}
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		if err := lockFile(f, l.opt.Wait); err != nil {
			f.Close()
			return fmt.Errorf("audit: %s: %w", name, err)
		}
		if len(nums) == 0 {
			if err := syncDir(name); err != nil {
				f.Close()
				return fmt.Errorf("audit: %w", err)
			}
		}
		// A process that held the lock may have rotated meanwhile.
		if again, err := segmentNumbers(path); err != nil || len(again) == 0 || again[len(again)-1] != n {
			f.Close()
			if err != nil || attempt >= 3 {
				return fmt.Errorf("audit: %s: the log changed while it was being opened (another process?)", path)
			}
			continue
		}
		if err := l.recoverSegment(f, name, n); err != nil {
			f.Close()
			return err
		}
		return nil
	}
}

// recoverSegment truncates a torn tail of segment n (open and locked as f)
// and continues the chain from its last record, or, when it holds none,
// from the previous segment's last record with a segment record.
func (l *Log) recoverSegment(f *os.File, name string, n int) error {
	w := &l.w
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	size := fi.Size()
	last, torn, err := segmentTail(f, size)
	if err != nil {
		return fmt.Errorf("audit: %s: %w", name, err)
	}
	if torn > 0 {
		size -= torn
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("audit: %s: truncating a torn tail: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	w.seg, w.size = n, size
	w.seq, w.prev = 0, [32]byte{}
	switch {
	case last != nil:
		if w.seq, w.prev, err = l.head(last); err != nil {
			return fmt.Errorf("audit: %s: last record: %w", name, err)
		}
	case n > 1:
		prevName := SegmentName(l.opt.Path, n-1)
		pf, err := os.Open(prevName)
		if err != nil {
			return fmt.Errorf("audit: %s is empty and the previous segment is unreadable: %w", name, err)
		}
		defer pf.Close()
		pfi, err := pf.Stat()
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		plast, ptorn, err := segmentTail(pf, pfi.Size())
		switch {
		case err != nil:
			return fmt.Errorf("audit: %s: %w", prevName, err)
		case plast == nil || ptorn > 0:
			return fmt.Errorf("audit: %s: does not end with a complete record", prevName)
		}
		if w.seq, w.prev, err = l.head(plast); err != nil {
			return fmt.Errorf("audit: %s: last record: %w", prevName, err)
		}
	}
	w.f = f // set only now: a failed reopen leaves no file behind
	if last == nil {
		l.sealSegment()
	}
	if torn > 0 {
		l.w.seal(&Record{TS: time.Now(), Kind: KindRecovered, Reason: strconv.FormatInt(torn, 10) + recoveredSuffix})
		w.recovered++
	}
	return nil
}

// head parses a segment's last line and checks its MAC with this log's key.
func (l *Log) head(line []byte) (uint64, [32]byte, error) {
	var r Record
	if _, err := parseLine(line, &r, nil); err != nil {
		return 0, [32]byte{}, err
	}
	if r.V != Version {
		return 0, [32]byte{}, fmt.Errorf("format version %d, want %d", r.V, Version)
	}
	if l.w.mac.sum(&r) != r.MAC {
		return 0, [32]byte{}, fmt.Errorf("seq %d: mac does not verify (another key?)", r.Seq)
	}
	return r.Seq, r.MAC, nil
}

// rotate closes the full segment (fsynced) and begins the next one with a
// segment record carrying the last MAC as its prev.
func (l *Log) rotate() error {
	w := &l.w
	if err := l.flush(); err != nil {
		return err
	}
	if err := l.syncNow(); err != nil {
		return err
	}
	name := SegmentName(l.opt.Path, w.seg+1)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	if err := lockFile(f, false); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := syncDir(name); err != nil {
		f.Close()
		return err
	}
	w.f.Close()
	w.f, w.seg, w.size = f, w.seg+1, 0
	l.sealSegment()
	return nil
}

func (l *Log) sealSegment() {
	l.w.seal(&Record{TS: time.Now(), Kind: KindSegment, Reason: strconv.Itoa(l.w.seg)})
}
