package audit

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenChain returns the golden HMAC chain's segments as lines.
func goldenChain(t *testing.T) [][][]byte {
	t.Helper()
	var segs [][][]byte
	for i := 1; i <= 2; i++ {
		data, err := os.ReadFile(SegmentName("testdata/golden-hmac/audit.log", i))
		require.NoError(t, err)
		segs = append(segs, bytes.SplitAfter(data[:len(data)-1], []byte("\n")))
		last := segs[i-1]
		last[len(last)-1] = append(last[len(last)-1], '\n')
	}
	return segs
}

// verifySegs verifies segments given as lines, in memory.
func verifySegs(segs [][][]byte, key []byte) (Summary, error) {
	v := NewVerifier(key)
	for i, lines := range segs {
		if err := v.File(SegmentName("audit.log", i+1), bytes.NewReader(bytes.Join(lines, nil))); err != nil {
			return v.Summary(), err
		}
	}
	return v.Summary(), v.End()
}

func requireBreak(t *testing.T, segs [][][]byte, file string, line int, what string, msgAndArgs ...any) {
	t.Helper()
	_, err := verifySegs(segs, testKey)
	var be *BreakError
	require.ErrorAs(t, err, &be, msgAndArgs...)
	require.Equal(t, file, be.File, msgAndArgs...)
	require.Equal(t, line, be.Line, msgAndArgs...)
	require.Contains(t, be.What, what, msgAndArgs...)
}

func cloneSegs(segs [][][]byte) [][][]byte {
	out := make([][][]byte, len(segs))
	for i, lines := range segs {
		for _, l := range lines {
			out[i] = append(out[i], bytes.Clone(l))
		}
	}
	return out
}

// TestVerifyEveryBitFlip flips every bit of every byte of a two-segment
// chain, one at a time: each is a break, on the line of the flipped byte
// (or the next one, when the flip removes a line end). Each flip is
// verified from a copy of the verifier as it stood before the flipped
// line, so the loop stays fast under -race.
func TestVerifyEveryBitFlip(t *testing.T) {
	segs := goldenChain(t)
	_, err := verifySegs(segs, testKey)
	require.NoError(t, err)
	flips := 0
	v := NewVerifier(testKey)
	for s, lines := range segs {
		name := SegmentName("audit.log", s+1)
		for k, line := range lines {
			rest := bytes.Join(lines[k:], nil)
			for i := range len(line) {
				for bit := range 8 {
					rest[i] ^= 1 << bit
					err := v.clone().lines(name, bytes.NewReader(rest), k)
					rest[i] ^= 1 << bit
					var be *BreakError
					if !errors.As(err, &be) || (be.Line != k+1 && be.Line != k+2) {
						t.Fatalf("%s line %d byte %d bit %d: want a break on line %d, have %v", name, k+1, i, bit, k+1, err)
					}
					flips++
				}
			}
			require.NoError(t, v.lines(name, bytes.NewReader(line), k), "the intact line")
		}
		v.sum.Segments++
	}
	t.Logf("%d flips detected", flips)
}

// clone copies the verifier's state (sharing its macer).
func (v *Verifier) clone() *Verifier {
	c := *v
	c.sum.Kinds = maps.Clone(v.sum.Kinds)
	return &c
}

func TestVerifyTampering(t *testing.T) {
	segs := goldenChain(t)
	const first, second = "audit.log", "audit.log.000002"
	f := func(what string, file string, line int, edit func(s [][][]byte) [][][]byte) {
		t.Helper()
		requireBreak(t, edit(cloneSegs(segs)), file, line, what)
	}
	// Deleted: every line but the last (cutting the newest records is what
	// a local chain cannot show: see TestVerifyTruncatedEnd).
	for i := range segs[0] {
		s := cloneSegs(segs)
		s[0] = slices.Delete(s[0], i, i+1)
		file, line, want := first, i+1, "1 records missing"
		switch i {
		case 0:
			want = "does not begin with a segment record"
		case len(segs[0]) - 1:
			file, line = second, 1 // seen where the next segment links to it
		}
		requireBreak(t, s, file, line, want, "delete line %d", i+1)
	}
	f("1 records missing", second, 1, func(s [][][]byte) [][][]byte { s[1] = s[1][1:]; return s })
	// Reordered: every adjacent pair swapped.
	for i := 0; i+1 < len(segs[0]); i++ {
		s := cloneSegs(segs)
		s[0][i], s[0][i+1] = s[0][i+1], s[0][i]
		requireBreak(t, s, first, i+1, "", "swap lines %d and %d", i+1, i+2)
	}
	// Duplicated: every line repeated.
	for i := range segs[0] {
		s := cloneSegs(segs)
		s[0] = slices.Insert(s[0], i+1, bytes.Clone(s[0][i]))
		requireBreak(t, s, first, i+2, "duplicated or moved", "duplicate line %d", i+1)
	}
	// Inserted: a record sealed with another key, or plain SHA-256, in the
	// right place of the chain (right seq, right prev).
	for _, key := range [][]byte{nil, []byte("forger-key-0123456789")} {
		for i := 1; i < len(segs[0]); i++ {
			s := cloneSegs(segs)
			var prev Record
			_, err := parseLine(s[0][i-1], &prev, nil)
			require.NoError(t, err)
			w := writer{mac: newMacer(key), seq: prev.Seq, prev: prev.MAC}
			forged := reject(i)
			forged.TS = prev.TS
			w.seal(forged)
			s[0] = slices.Insert(s[0], i, w.buf)
			requireBreak(t, s, first, i+1, "mac does not verify", "insert before line %d", i+1)
		}
	}
	// A segment left out, or the segments given in the wrong order.
	f("records missing", second, 1, func(s [][][]byte) [][][]byte {
		return [][][]byte{s[0][:5], s[1]}
	})
	f("seq 1 after seq 11", second, 1, func(s [][][]byte) [][][]byte { return [][][]byte{s[1], s[0]} })
	// Whole lines replaced by those of another valid chain (a fresh log).
	f("mac does not verify", first, 1, func(s [][][]byte) [][][]byte {
		s[0][0] = sealGolden([]byte("another-key-0123456789"))[0][:353]
		return s
	})
	// A line end removed: two records on one line.
	f("", first, 3, func(s [][][]byte) [][][]byte {
		s[0][2] = bytes.TrimSuffix(s[0][2], []byte("\n"))
		return s
	})
	// An empty segment.
	f("empty file", second, 1, func(s [][][]byte) [][][]byte { s[1] = nil; return s })
	// A record written with the right key but the wrong shape: a segment
	// record inside a file.
	f("segment record inside a file", first, 10, func(s [][][]byte) [][][]byte {
		s[0] = append(s[0], s[1][0])
		return [][][]byte{s[0]}
	})
}

// TestVerifyTruncatedEnd: removing the newest records, whole lines, is not
// visible in the chain itself; a head anchored elsewhere shows it.
func TestVerifyTruncatedEnd(t *testing.T) {
	segs := goldenChain(t)
	full, err := verifySegs(segs, testKey)
	require.NoError(t, err)
	cut, err := verifySegs([][][]byte{segs[0]}, testKey)
	require.NoError(t, err, "cut at a line end: the chain alone cannot tell")
	require.Equal(t, uint64(11), full.LastSeq)
	require.Equal(t, uint64(9), cut.LastSeq)

	dir := t.TempDir()
	for i, lines := range segs {
		require.NoError(t, os.WriteFile(SegmentName(filepath.Join(dir, "audit.log"), i+1), bytes.Join(lines, nil), 0o644))
	}
	path := filepath.Join(dir, "audit.log")
	anchor := map[uint64][32]byte{11: full.Head, 9: cut.Head}
	_, err = VerifyFiles([]string{path}, testKey, anchor)
	require.NoError(t, err, "both anchors are in the chain")

	_, err = VerifyFiles([]string{path}, testKey, map[uint64][32]byte{5: full.Head})
	var be *BreakError
	require.ErrorAs(t, err, &be)
	require.Equal(t, BreakError{File: path, Line: 5, What: be.What, Segment: 1}, *be)
	require.Contains(t, be.What, "the anchor says")

	_, err = VerifyFiles([]string{path + ".000002"}, testKey, anchor)
	require.ErrorAs(t, err, &be)
	require.Equal(t, BreakError{File: path + ".000002", Line: 1, What: "anchored seq 9 is before the first record given (seq 10): give the earlier segments", Segment: 2}, *be)

	require.NoError(t, os.Remove(path+".000002"))
	_, err = VerifyFiles([]string{path}, testKey, anchor)
	require.ErrorAs(t, err, &be)
	require.Equal(t, BreakError{File: path, Line: 9, What: "the chain ends at seq 9, before anchored seq 11: records were cut off", Segment: 1}, *be)
}

// A chain given from a later segment on verifies, and says it does not
// start at seq 1.
func TestVerifyFromLaterSegment(t *testing.T) {
	sum, err := VerifyFiles([]string{"testdata/golden-hmac/audit.log.000002"}, testKey, nil)
	require.NoError(t, err)
	require.False(t, sum.Genesis)
	require.Equal(t, uint64(10), sum.FirstSeq)
	require.Equal(t, uint64(2), sum.Records)
}

func TestVerifyExpand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "audit.log")
	for _, n := range []string{"audit.log", "audit.log.000002", "audit.log.000010", "audit.log.2", "audit.log.lock", "other"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	got, err := Expand([]string{p})
	require.NoError(t, err)
	require.Equal(t, []string{p, p + ".000002", p + ".000010"}, got)
	got, err = Expand([]string{p, p + ".000002", p + ".000010"})
	require.NoError(t, err)
	require.Equal(t, []string{p, p + ".000002", p + ".000010"}, got, "a glob names each once")
	got, err = Expand([]string{p + ".000010"})
	require.NoError(t, err)
	require.Equal(t, []string{p + ".000010"}, got, "a numbered segment alone")

	bare := filepath.Join(dir, "auditlog")
	require.NoError(t, os.WriteFile(bare, nil, 0o644))
	require.NoError(t, os.WriteFile(bare+".000002", nil, 0o644))
	got, err = Expand([]string{bare})
	require.NoError(t, err)
	require.Equal(t, []string{bare, bare + ".000002"}, got, "a log named without a dot")

	hidden := filepath.Join(dir, ".000002") // a log, not a segment: nothing before the dot
	require.NoError(t, os.WriteFile(hidden, nil, 0o644))
	require.NoError(t, os.WriteFile(hidden+".000002", nil, 0o644))
	got, err = Expand([]string{hidden})
	require.NoError(t, err)
	require.Equal(t, []string{hidden, hidden + ".000002"}, got, "a log named like a segment suffix")
}

func TestVerifyUnreadable(t *testing.T) {
	_, err := VerifyFiles([]string{filepath.Join(t.TempDir(), "missing.log")}, testKey, nil)
	require.Error(t, err)
	var be *BreakError
	require.False(t, errors.As(err, &be))
}

// TestParseLineEveryPrefix: every proper prefix of a record line is refused
// with an error, whichever field it ends in (never an index past the end).
func TestParseLineEveryPrefix(t *testing.T) {
	line := goldenChain(t)[0][1]
	var r Record
	_, err := parseLine(line, &r, nil)
	require.NoError(t, err)
	for i := range len(line) {
		require.NotPanics(t, func() {
			_, err = parseLine(line[:i], &r, nil)
		}, "%q", line[:i])
		require.Error(t, err, "%q", line[:i])
	}
}
