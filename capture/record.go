package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bidguard/bidguard/jsonraw"
)

// Record is one line of a capture file, read by ParseRecord. Its slices
// are subslices of the line.
type Record struct {
	Time     time.Time
	Upstream string
	// LatencyMs is the bidder's response time (HasLatency: the record
	// carries one).
	LatencyMs  float64
	HasLatency bool
	// Request and Response are the documents as captured.
	Request, Response []byte
	// Verdict is the summary's raw JSON (nil when the record has none):
	// Summary decodes it.
	Verdict []byte
}

// ErrMalformed is wrapped by every error of ParseRecord and of a Reader's
// lines that are not records.
var ErrMalformed = errors.New("malformed record")

// ParseRecord reads a record line (its line break may be left on). The
// line must be a JSON object with a request and a response object; time,
// upstream, latencyMs and verdict are read when present. The members are
// found by their structure only: the documents are checked when the engine
// decodes them (one validating pass each), the other members when read.
func ParseRecord(line []byte) (Record, error) {
	var r Record
	m, ok := jsonraw.Object(line)
	if !ok {
		return r, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	for {
		k, v, more := m.Next()
		if !more {
			break
		}
		switch {
		case jsonraw.KeyIs(k, "request"):
			r.Request = v
		case jsonraw.KeyIs(k, "response"):
			r.Response = v
		case jsonraw.KeyIs(k, "verdict"):
			if !json.Valid(v) {
				return r, fmt.Errorf("%w: verdict is not JSON", ErrMalformed)
			}
			r.Verdict = v
		case jsonraw.KeyIs(k, "latencyMs"):
			f, ok := jsonraw.Float(v)
			if !ok || f < 0 {
				return r, fmt.Errorf("%w: latencyMs is not a number >= 0", ErrMalformed)
			}
			r.LatencyMs, r.HasLatency = f, true
		case jsonraw.KeyIs(k, "upstream"):
			s, ok := plainString(v)
			if !ok && json.Unmarshal(v, &s) != nil {
				return r, fmt.Errorf("%w: upstream is not a string", ErrMalformed)
			}
			r.Upstream = s
		case jsonraw.KeyIs(k, "time"):
			s, ok := plainString(v)
			if !ok && json.Unmarshal(v, &s) != nil {
				return r, fmt.Errorf("%w: time is not a string", ErrMalformed)
			}
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return r, fmt.Errorf("%w: time: %v", ErrMalformed, err)
			}
			r.Time = t
		}
	}
	if !m.Complete() {
		return r, fmt.Errorf("%w: not a whole JSON object", ErrMalformed)
	}
	// After the last member: space, the closing brace, space.
	if _, end := m.Span(); end > 0 {
		if i := jsonraw.SkipSpace(line, end); i >= len(line) || line[i] != '}' || jsonraw.SkipSpace(line, i+1) != len(line) {
			return r, fmt.Errorf("%w: text after the object", ErrMalformed)
		}
	}
	for _, doc := range []struct {
		name string
		v    []byte
	}{{"request", r.Request}, {"response", r.Response}} {
		if _, ok := jsonraw.Object(doc.v); !ok {
			return r, fmt.Errorf("%w: no %s object", ErrMalformed, doc.name)
		}
	}
	return r, nil
}

// plainString is the JSON string v when it needs no unescaping.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || jsonraw.NeedsUnescape(v[1:len(v)-1]) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// Summary decodes the record's verdict summary; ok is false when the
// record has none or it does not decode.
func (r *Record) Summary() (s Summary, ok bool) {
	if r.Verdict == nil || json.Unmarshal(r.Verdict, &s) != nil {
		return Summary{}, false
	}
	return s, true
}

// MaxLine is the longest line a Reader returns; a longer one is skipped as
// malformed.
const MaxLine = 64 << 20

// Reader reads the lines of a capture file, plain or gzip-compressed.
type Reader struct {
	br   *bufio.Reader
	gz   *gzip.Reader
	line []byte
	n    int // lines read
}

// NewReader reads r, decompressing it when it starts with gzip's magic
// bytes.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	rd := &Reader{br: br}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		rd.gz = gz
		rd.br = bufio.NewReaderSize(gz, 256<<10)
	}
	return rd, nil
}

// Line returns the next non-blank line without its line break, valid until
// the next call, and its number (from 1). At the end it returns io.EOF. A
// line over MaxLine returns an error wrapping ErrMalformed (the reader goes
// on after it); a read error (a truncated gzip stream) is returned as it is,
// after which the Reader is done. A last line without a line break is
// returned like any other: ParseRecord tells whether it is whole.
func (r *Reader) Line() ([]byte, int, error) {
	for {
		r.line = r.line[:0]
		over := false
		for {
			chunk, err := r.br.ReadSlice('\n')
			if !over {
				if len(r.line)+len(chunk) > MaxLine {
					over, r.line = true, r.line[:0]
				} else {
					r.line = append(r.line, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, r.n, err
			}
			if err != nil && len(r.line) == 0 && !over {
				return nil, r.n, io.EOF
			}
			break
		}
		r.n++
		if over {
			return nil, r.n, fmt.Errorf("%w: line over %d bytes", ErrMalformed, MaxLine)
		}
		line := bytes.TrimRight(r.line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			return line, r.n, nil
		}
	}
}

// OpenFile opens a capture file for a Reader; Close closes both.
func OpenFile(path string) (*Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := NewReader(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return r, f, nil
}
