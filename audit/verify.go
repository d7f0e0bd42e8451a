package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BreakError is the first place a chain does not verify.
type BreakError struct {
	File string
	Line int
	What string
	// Segment is the number of the segment the break is in (its segment
	// record's, or the one expected there); 0 when it cannot be told.
	Segment int
}

func (e *BreakError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.What) }

// Summary is what a verification saw, up to the first break.
type Summary struct {
	Records  uint64
	Segments int // files
	// FirstSeq and LastSeq are the sequence numbers of the first and last
	// records; Genesis is true when the chain starts at seq 1 (no earlier
	// segment was left out).
	FirstSeq, LastSeq uint64
	Genesis           bool
	// First and Last are the earliest and latest ts.
	First, Last time.Time
	// Gaps counts gap records, Dropped the records they say were dropped.
	Gaps    int
	Dropped uint64
	// Recoveries counts recovered records, Truncated the bytes they cut.
	Recoveries int
	Truncated  uint64
	Kinds      map[Kind]uint64
	// Head is the MAC of the last record: with LastSeq, what to anchor
	// outside the host.
	Head [32]byte
}

// Verifier checks a chain one segment file after another, streaming: every
// line must be the canonical encoding of a record of a known kind whose MAC
// verifies with the key; seq must grow by one and prev must be the previous
// record's MAC, across files too; every file must begin with a segment
// record (and hold no other), numbered one more than the file before; gap,
// recovered and segment records must carry their counts and nothing else.
// The first record must be seq 1 with a zero prev, or a segment record (the
// earlier segments were not given). A Verifier is not safe for concurrent
// use.
type Verifier struct {
	mac     *macer
	sum     Summary
	started bool
	seg     int // the number of the segment being read
	// firstSeg is the number of the first segment given
	firstSeg int
	rec      Record
	scratch  []byte
	anchors  map[uint64][32]byte
	// where the first and the last lines were read, for a break End finds
	firstFile, lastFile string
	lastLine            int
}

// NewVerifier returns a Verifier for chains written with key (empty: plain
// SHA-256).
func NewVerifier(key []byte) *Verifier {
	return &Verifier{mac: newMacer(key), sum: Summary{Kinds: map[Kind]uint64{}}}
}

// Anchor adds a head seen earlier (shipped outside the host): the record
// seq must be in the chain with that mac. An anchor past the chain's last
// record (records were cut off), or before its first (earlier segments were
// not given), is a break End reports.
func (v *Verifier) Anchor(seq uint64, mac [32]byte) {
	if v.anchors == nil {
		v.anchors = map[uint64][32]byte{}
	}
	v.anchors[seq] = mac
}

// End reports a break that shows only when every file was read: an anchor
// the chain did not reach.
func (v *Verifier) End() error {
	var after, before uint64
	for seq := range v.anchors {
		if seq > v.sum.LastSeq {
			after = max(after, seq)
		}
		if seq < v.sum.FirstSeq && (before == 0 || seq < before) {
			before = seq
		}
	}
	switch {
	case after > 0:
		return &BreakError{File: v.lastFile, Line: v.lastLine, Segment: v.seg,
			What: fmt.Sprintf("the chain ends at seq %d, before anchored seq %d: records were cut off", v.sum.LastSeq, after)}
	case before > 0:
		return &BreakError{File: v.firstFile, Line: 1, Segment: v.firstSeg,
			What: fmt.Sprintf("anchored seq %d is before the first record given (seq %d): give the earlier segments", before, v.sum.FirstSeq)}
	}
	return nil
}

// Summary returns what was verified so far.
func (v *Verifier) Summary() Summary { return v.sum }

// File verifies the next segment of the chain, read from r. It returns a
// *BreakError at the first break, another error when r fails.
func (v *Verifier) File(name string, r io.Reader) error { return v.lines(name, r, 0) }

// lines verifies r as the lines of a segment file after its first skip
// lines, which were verified before.
func (v *Verifier) lines(name string, r io.Reader, skip int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	sc.Split(splitLines)
	n := skip
	before := v.seg // this file's segment record, once read, sets v.seg
	brk := func(line int, what string) error {
		seg := v.seg
		if seg == before && skip == 0 {
			// The break is at or before this file's segment record: the
			// segment is the one expected after the last, or, for the
			// first file given, the one its name says (audit.log: 1).
			seg = before + 1
			if before == 0 {
				base := filepath.Base(name)
				if dot := strings.LastIndexByte(base, '.'); dot > 0 {
					seg = max(1, segmentNumber(base[:dot], base))
				}
			}
		}
		return &BreakError{File: name, Line: line, What: what, Segment: seg}
	}
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if b[len(b)-1] != '\n' {
			return brk(n, "incomplete last record (no line end): a torn tail, which serve truncates when it opens the log")
		}
		v.lastFile, v.lastLine = name, n
		if v.firstFile == "" {
			v.firstFile = name
		}
		if what := v.line(b, n == 1); what != "" {
			return brk(n, what)
		}
		if v.firstSeg == 0 {
			v.firstSeg = v.seg
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return brk(n+1, fmt.Sprintf("line longer than %d bytes", maxLine))
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	}
	if n == 0 {
		return brk(1, "empty file: a segment begins with a segment record")
	}
	v.sum.Segments++
	return nil
}

// line checks one line and returns what is wrong with it, or "".
func (v *Verifier) line(b []byte, first bool) string {
	r := &v.rec
	var err error
	if v.scratch, err = parseLine(b, r, v.scratch); err != nil {
		return err.Error()
	}
	if r.V != Version {
		return fmt.Sprintf("format version %d, want %d", r.V, Version)
	}
	if v.mac.sum(r) != r.MAC {
		if !v.started {
			return "mac does not verify (tampered, or another key: --key-file)"
		}
		return "mac does not verify: the record was changed"
	}
	if !knownKind(r.Kind) {
		return fmt.Sprintf("unknown kind %q", r.Kind)
	}
	s := &v.sum
	switch {
	case !v.started && r.Seq == 1 && r.Prev != [32]byte{}:
		return "seq 1 has a non-zero prev"
	case !v.started && r.Seq == 0:
		return "seq 0"
	case v.started && r.Seq != s.LastSeq+1:
		if r.Seq <= s.LastSeq {
			return fmt.Sprintf("seq %d after seq %d: a record duplicated or moved", r.Seq, s.LastSeq)
		}
		return fmt.Sprintf("seq %d after seq %d: %d records missing", r.Seq, s.LastSeq, r.Seq-s.LastSeq-1)
	case v.started && r.Prev != s.Head:
		return fmt.Sprintf("prev is not the mac of seq %d: the chain was rewritten", s.LastSeq)
	case first && r.Kind != KindSegment:
		return "the file does not begin with a segment record"
	case !first && r.Kind == KindSegment:
		return "segment record inside a file: a segment begins only a file"
	}
	if what := v.shape(r); what != "" {
		return what
	}
	if mac, ok := v.anchors[r.Seq]; ok && mac != r.MAC {
		return fmt.Sprintf("seq %d has mac %x, the anchor says %x: the chain was rewritten", r.Seq, r.MAC, mac)
	}
	if !v.started {
		v.started = true
		s.FirstSeq, s.Genesis = r.Seq, r.Seq == 1
		s.First, s.Last = r.TS, r.TS
	}
	s.Records++
	s.LastSeq, s.Head = r.Seq, r.MAC
	s.Kinds[r.Kind]++
	if r.TS.Before(s.First) {
		s.First = r.TS
	}
	if r.TS.After(s.Last) {
		s.Last = r.TS
	}
	return ""
}

// shape checks what a writer-made record carries and counts it.
func (v *Verifier) shape(r *Record) string {
	switch r.Kind {
	case KindGap, KindRecovered, KindSegment:
	default:
		return ""
	}
	if r.ReqID != "" || r.Seat != "" || r.BidID != "" || r.CRID != "" || len(r.ADomain) > 0 || r.PriceMicros != 0 ||
		r.Gate != "" || r.NBR != 0 || r.Loss != 0 || r.Policy != "" {
		return fmt.Sprintf("%s record with fields other than reason", r.Kind)
	}
	s := &v.sum
	switch r.Kind {
	case KindGap:
		n, ok := count(r.Reason, gapSuffix)
		if !ok {
			return fmt.Sprintf("gap record reason %q, want %q", r.Reason, "<n>"+gapSuffix)
		}
		s.Gaps++
		s.Dropped += n
	case KindRecovered:
		n, ok := count(r.Reason, recoveredSuffix)
		if !ok {
			return fmt.Sprintf("recovered record reason %q, want %q", r.Reason, "<n>"+recoveredSuffix)
		}
		s.Recoveries++
		s.Truncated += n
	case KindSegment:
		n, ok := count(r.Reason, "")
		switch {
		case !ok:
			return fmt.Sprintf("segment record reason %q, want the segment number", r.Reason)
		case r.Seq == 1 && n != 1:
			return fmt.Sprintf("seq 1 begins segment %d, want 1", n)
		case v.seg > 0 && n != uint64(v.seg)+1:
			return fmt.Sprintf("segment %d follows segment %d", n, v.seg)
		}
		v.seg = int(n)
	}
	return ""
}

// count parses "<n><suffix>" with n a canonical decimal ≥ 1.
func count(reason, suffix string) (uint64, bool) {
	digits, ok := strings.CutSuffix(reason, suffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 63)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != digits {
		return 0, false
	}
	return n, true
}

// Expand lists the files to verify for the arguments of `audit verify`: a
// path is followed by its later segments (path.000002, ...) when it is not
// itself a numbered segment, and a file named twice is verified once.
func Expand(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if c := filepath.Clean(p); !seen[c] {
			seen[c] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		add(p)
		if isNumbered(p) {
			continue
		}
		segs, err := Segments(p)
		if err != nil {
			return nil, err
		}
		for _, s := range segs {
			if s != p {
				add(s)
			}
		}
	}
	return out, nil
}

// splitLines is bufio.ScanLines keeping the line end, so a last line
// without one shows.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i+1], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// isNumbered reports whether p names segment n ≥ 2 of some log.
func isNumbered(p string) bool {
	base := filepath.Base(p)
	dot := strings.LastIndexByte(base, '.')
	return dot > 0 && segmentNumber(base[:dot], base) > 0
}

// VerifyFiles verifies files in order as one chain (see Expand for what
// the arguments name), with the anchors given (seq → mac). The error is a
// *BreakError at the first break, or the error of a file that could not be
// read.
func VerifyFiles(paths []string, key []byte, anchors map[uint64][32]byte) (Summary, error) {
	v := NewVerifier(key)
	for seq, mac := range anchors {
		v.Anchor(seq, mac)
	}
	files, err := Expand(paths)
	if err != nil {
		return v.Summary(), err
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return v.Summary(), err
		}
		err = v.File(name, f)
		f.Close()
		if err != nil {
			return v.Summary(), err
		}
	}
	return v.Summary(), v.End()
}
