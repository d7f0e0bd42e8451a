package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// count is a Counter for tests.
type count struct{ n atomic.Int64 }

func (c *count) Add(n int) { c.n.Add(int64(n)) }
func (c *count) get() int  { return int(c.n.Load()) }

type meters struct{ written, dropped, failed, bytes, rotated count }

func (m *meters) Meters() Meters {
	return Meters{Written: &m.written, Dropped: &m.dropped, Failed: &m.failed, Bytes: &m.bytes, Rotated: &m.rotated}
}

const testRequest = `{"id":"req-1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"tmax":120}`
const testResponse = `{"id":"req-1","seatbid":[{"seat":"s1","bid":[{"id":"b1","impid":"1","price":1.5}]}]}`

func submit(w *Writer, id string) bool {
	e := w.Acquire()
	if e == nil {
		return false
	}
	e.Arrival = time.Unix(1_700_000_000, 5).UTC()
	e.Upstream = "up"
	e.LatencyMs = 12.5
	e.Request = append(e.Request[:0], strings.Replace(testRequest, "req-1", id, 1)...)
	e.Response = append(e.Response[:0], testResponse...)
	e.SetOutcome("c0ffee", "filter", 0, Judged{Status: "passed"})
	e.AddBid(Judged{ID: "b1", Seat: "s1", Status: "rejected", Gate: "bidSanity", Reason: `price "1.5" over floor`})
	return w.Submit(e)
}

// readAll parses every line of the files named, failing on a malformed one.
func readAll(t *testing.T, files ...string) []Record {
	t.Helper()
	var out []Record
	for _, f := range files {
		r, c, err := OpenFile(f)
		require.NoError(t, err)
		for {
			line, n, err := r.Line()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			rec, err := ParseRecord(bytes.Clone(line))
			require.NoError(t, err, "%s:%d", f, n)
			out = append(out, rec)
		}
		require.NoError(t, c.Close())
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var m meters
	w := New(Options{Path: filepath.Join(dir, "c.jsonl"), Meters: m.Meters()})
	require.True(t, submit(w, "req-1"))
	require.NoError(t, w.Close())
	require.False(t, submit(w, "late"), "after Close: dropped")
	require.Equal(t, 1, m.written.get())
	require.Equal(t, 1, m.dropped.get())
	recs := readAll(t, filepath.Join(dir, "c.jsonl"))
	require.Len(t, recs, 1)
	r := recs[0]
	require.Equal(t, time.Unix(1_700_000_000, 5).UTC(), r.Time)
	require.Equal(t, "up", r.Upstream)
	require.True(t, r.HasLatency)
	require.Equal(t, 12.5, r.LatencyMs)
	require.JSONEq(t, testRequest, string(r.Request))
	require.Equal(t, testResponse, string(r.Response), "the bytes as received")
	s, ok := r.Summary()
	require.True(t, ok)
	require.Equal(t, Summary{Config: "c0ffee", Action: "filter", Response: Judged{Status: "passed"},
		Bids: []Judged{{ID: "b1", Seat: "s1", Status: "rejected", Gate: "bidSanity", Reason: `price "1.5" over floor`}}}, s)
	st, err := os.Stat(filepath.Join(dir, "c.jsonl"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "records may hold personal data")
}

// Many producers, a tiny file size: every entry is written or counted as
// dropped, rotation keeps maxFiles files, and every line of them is whole.
func TestCaptureUnderLoadRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonl")
	var m meters
	w := New(Options{Path: path, MaxBytes: 4096, MaxFiles: 3, QueueEntries: 64, Meters: m.Meters()})
	const producers, each = 8, 500
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				submit(w, fmt.Sprintf("req-%d-%d", p, i))
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Close())
	require.Equal(t, producers*each, m.written.get()+m.dropped.get())
	require.Zero(t, m.failed.get())
	require.Greater(t, m.written.get(), 0)
	require.Greater(t, m.rotated.get(), 2)
	files, err := filepath.Glob(path + "*")
	require.NoError(t, err)
	require.Len(t, files, 3, "maxFiles, the open one included")
	ns := rotatedFiles(path)
	require.Len(t, ns, 2)
	require.Equal(t, m.rotated.get(), ns[1], "the newest rotated file is the last rotation")
	var size int
	for _, f := range files {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), int64(4096))
		size += int(st.Size())
	}
	recs := readAll(t, files...)
	require.NotEmpty(t, recs)
	require.LessOrEqual(t, size, m.bytes.get())

	// A restart appends and continues the numbering.
	w = New(Options{Path: path, MaxBytes: 4096, MaxFiles: 3})
	for i := range 40 {
		submit(w, fmt.Sprintf("again-%d", i))
	}
	require.NoError(t, w.Close())
	require.Greater(t, rotatedFiles(path)[0], ns[0], "numbers go on from the newest")
	require.Greater(t, newestRotated(path), ns[1])
}

// A queue that is full drops at once and counts: Submit never waits.
func TestFullQueueDrops(t *testing.T) {
	var m meters
	w := New(Options{Path: filepath.Join(t.TempDir(), "c"), QueueBytes: 1, Meters: m.Meters()})
	require.False(t, submit(w, "first"), "over the byte bound")
	for i := range 9 {
		require.False(t, submit(w, fmt.Sprint(i)), "queue still over its bound")
	}
	require.NoError(t, w.Close())
	require.Equal(t, 10, m.dropped.get())
	require.Zero(t, m.written.get())
}

// A full disk (/dev/full answers every write with ENOSPC) and a path under a
// file are counted and logged once, never fatal; the file is tried again.
func TestUnwritableIsCountedNotFatal(t *testing.T) {
	retry := retryEvery
	retryEvery = 0
	t.Cleanup(func() { retryEvery = retry })
	f := func(path string) (*meters, string) {
		m := new(meters)
		var logs bytes.Buffer
		w := New(Options{Path: path, Meters: m.Meters(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		for i := range 20 {
			submit(w, fmt.Sprint(i))
			// One at a time: each is its own attempt.
			require.Eventually(t, func() bool { return m.failed.get()+m.written.get() == i+1 }, 10*time.Second, time.Millisecond)
		}
		_ = w.Close()
		return m, logs.String()
	}
	dir := t.TempDir()
	if _, err := os.Stat("/dev/full"); err == nil {
		full := filepath.Join(dir, "full.jsonl")
		require.NoError(t, os.Symlink("/dev/full", full))
		m, logs := f(full)
		require.Equal(t, 20, m.failed.get())
		require.Zero(t, m.written.get())
		require.Equal(t, 1, strings.Count(logs, "capture file not written"), logs)
		require.Contains(t, logs, "no space left on device")
	}
	file := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	m, logs := f(filepath.Join(file, "c.jsonl"))
	require.Equal(t, 20, m.failed.get())
	require.Equal(t, 1, strings.Count(logs, "level=ERROR"), logs)
	require.Contains(t, logs, "capture file not opened")

	// Writable again: records are written and the recovery is logged.
	var m2 meters
	var logs2 bytes.Buffer
	path := filepath.Join(dir, "later", "c.jsonl")
	w := New(Options{Path: path, Meters: m2.Meters(), Logger: slog.New(slog.NewTextHandler(&logs2, nil))})
	submit(w, "a")
	require.Eventually(t, func() bool { return m2.failed.get() == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, os.Mkdir(filepath.Dir(path), 0o700))
	submit(w, "b")
	require.NoError(t, w.Close())
	require.Equal(t, 1, m2.written.get())
	require.Contains(t, logs2.String(), "capture file written again")
	require.Len(t, readAll(t, path), 1)
}

// A file whose last line was torn gets a line break before the next record.
func TestAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"time":"2026-`), 0o600))
	w := New(Options{Path: path})
	submit(w, "x")
	require.NoError(t, w.Close())
	r, c, err := OpenFile(path)
	require.NoError(t, err)
	defer c.Close()
	line, _, err := r.Line()
	require.NoError(t, err)
	_, err = ParseRecord(line)
	require.ErrorIs(t, err, ErrMalformed)
	line, _, err = r.Line()
	require.NoError(t, err)
	_, err = ParseRecord(line)
	require.NoError(t, err)
}

func TestDefaultRedactCoversEveryPath(t *testing.T) {
	req := `{"id":"r","imp":[{"id":"1"}],
	"user":{"id":"u1","buyeruid":"b1","eids":[{"source":"x","uids":[{"id":"e"}]}],"keywords":"k",
		"ext":{"id":"u2","buyeruid":"b2","eids":[{"source":"y"}],"consent":"c"}},
	"device":{"ifa":"ifa1","ip":"1.2.3.4","ipv6":"::1","ua":"Mozilla","geo":{"lat":1.5,"lon":2.5,"country":"USA"},
		"ext":{"ifa":"ifa2","ip":"5.6.7.8","ipv6":"::2","geo":{"lat":3.5,"lon":4.5,"city":"X"},"atts":3}}}`
	out := NewRedactor(DefaultRedact).Append(nil, []byte(req))
	require.NotContains(t, string(out), "\n", "one line")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out, &doc))
	get := func(path string) (any, bool) {
		var v any = doc
		for _, name := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[name]; !ok {
				return nil, false
			}
		}
		return v, true
	}
	require.Len(t, DefaultRedact, 16)
	for _, p := range DefaultRedact {
		v, ok := get(p)
		require.True(t, ok, "%s kept as a key", p)
		require.Nil(t, v, "%s blanked", p)
	}
	for p, want := range map[string]any{"user.keywords": "k", "user.ext.consent": "c", "device.ua": "Mozilla",
		"device.geo.country": "USA", "device.ext.geo.city": "X", "device.ext.atts": 3.0, "id": "r"} {
		v, _ := get(p)
		require.Equal(t, want, v, p)
	}
	for _, secret := range []string{"u1", "b1", "u2", "b2", "ifa1", "ifa2", "1.2.3.4", "5.6.7.8", "::1", "::2", "1.5", "4.5", `"e"`, `"y"`} {
		require.NotContains(t, string(out), secret)
	}
}

// Keys match as the decoder matches them (case, escapes), duplicates
// included; what is not an object is left alone.
func TestRedactMatchesLikeTheDecoder(t *testing.T) {
	f := func(paths []string, in, want string) {
		t.Helper()
		require.Equal(t, want, string(NewRedactor(paths).Append([]byte("x"), []byte(in)))[1:])
	}
	f([]string{"user.id"}, `{"USER":{"Id":"a","\u0069d":"b"}}`, `{"USER":{"Id":null,"\u0069d":null}}`)
	f([]string{"user.id"}, `{"user":{"id":"a"},"user":{"id":"b"}}`, `{"user":{"id":null},"user":{"id":null}}`)
	f([]string{"user.id"}, `{"user":"x","imp":[{"user":{"id":1}}]}`, `{"user":"x","imp":[{"user":{"id":1}}]}`)
	f([]string{"user", "user.id"}, `{"user":{"id":1}}`, `{"user":null}`)
	f([]string{"device.geo.lat"}, "{\r\n \"device\" : {\"geo\":\n{\"lat\" : 1.25 , \"lon\":2}}}", `{   "device" : {"geo": {"lat" : null , "lon":2}}}`)
	f(nil, "{\n}", "{ }")
}

// The choice depends on the id only: fixed values guard the contract two
// sidecars (or another implementation) share.
func TestSamplingIsDeterministic(t *testing.T) {
	require.Equal(t, uint64(0xaf63dc4c8601ec8c), fnv1a("a"), "64-bit FNV-1a")
	require.False(t, Sampled("req-1", 0))
	require.True(t, Sampled("req-1", 1))
	n, chosen := 200_000, 0
	var firsts []string
	for i := range n {
		id := fmt.Sprintf("auction-%d", i)
		s := Sampled(id, 0.01)
		require.Equal(t, s, Sampled(id, 0.01))
		if s {
			chosen++
			require.True(t, Sampled(id, 0.02), "a larger share keeps the auctions of a smaller one")
			if len(firsts) < 3 {
				firsts = append(firsts, id)
			}
		}
	}
	require.InDelta(t, 0.01, float64(chosen)/float64(n), 0.001)
	// The same as an independent implementation of the package comment's
	// function (FNV-1a 64, SplitMix64's finaliser, the top 53 bits).
	require.Equal(t, []string{"auction-96", "auction-123", "auction-143"}, firsts)
}

func TestReaderPlainGzipAndDamage(t *testing.T) {
	good := `{"request":{"id":"r"},"response":{"id":"r"}}`
	plain := good + "\n\n" + good + "\r\n" + `{"request":{"id":"r"},"resp` // truncated last line
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(plain))
	require.NoError(t, zw.Close())
	for name, data := range map[string][]byte{"plain": []byte(plain), "gzip": gz.Bytes()} {
		r, err := NewReader(bytes.NewReader(data))
		require.NoError(t, err, name)
		var ok, bad []int
		for {
			line, n, err := r.Line()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			if _, err := ParseRecord(line); err != nil {
				require.ErrorIs(t, err, ErrMalformed)
				bad = append(bad, n)
			} else {
				ok = append(ok, n)
			}
		}
		require.Equal(t, []int{1, 3}, ok, name)
		require.Equal(t, []int{4}, bad, name)
	}
	// A truncated gzip stream is a read error after the lines it held.
	r, err := NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()-10]))
	require.NoError(t, err)
	var err2 error
	for err2 == nil {
		_, _, err2 = r.Line()
	}
	require.ErrorIs(t, err2, io.ErrUnexpectedEOF)

	for _, line := range []string{`[]`, `{"request":{}}`, `{"request":{},"response":[]}`, `{"request":{},"response":{},"latencyMs":"x"}`,
		`{"request":{},"response":{},"time":"yesterday"}`, `{"request":{},"response":{},"upstream":1}`, `{"request":{},"response":{}} x`} {
		_, err := ParseRecord([]byte(line))
		require.ErrorIs(t, err, ErrMalformed, line)
	}
}
