package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/pool"
)

// replayItem is one input of replay: a capture record's line, or a pair
// read from a directory. It owns its bytes.
type replayItem struct {
	seq    int
	path   string       // the file, or the pair's path
	lineNo int          // the line of a capture file (0: none)
	line   []byte       // a capture record; nil for a pair
	buf    *pool.Buffer // holds line: released once the item is judged
	// A pair from a directory (line == nil): the documents, the latency
	// the latency gate sees (hasLatency) and where the clock stands.
	req, resp            []byte
	latencyMs, elapsedMs float64
	hasLatency, hasClock bool
	problem              error // the pair could not be read: counted as malformed
}

// where is path, with the line of a capture file.
func (it *replayItem) where() string {
	if it.lineNo == 0 {
		return it.path
	}
	return fmt.Sprintf("%s:%d", it.path, it.lineNo)
}

// checkInputs reports the first input that does not exist or cannot be
// opened: bad input, before anything is replayed.
func checkInputs(paths []string) error {
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_ = f.Close()
	}
	return nil
}

// readInputs sends every input's items to out, in order, then closes it.
// A capture file's read error (a truncated gzip stream) ends that file and
// is counted as one malformed item.
func readInputs(paths []string, out chan<- *replayItem) {
	defer close(out)
	seq := 0
	send := func(it *replayItem) {
		it.seq = seq
		seq++
		out <- it
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			readPairDir(p, send)
			continue
		}
		readCaptureFile(p, send)
	}
}

func readCaptureFile(path string, send func(*replayItem)) {
	r, c, err := capture.OpenFile(path)
	if err != nil {
		send(&replayItem{path: path, problem: err})
		return
	}
	defer c.Close()
	for {
		line, n, err := r.Line()
		switch {
		case errors.Is(err, io.EOF):
			return
		case errors.Is(err, capture.ErrMalformed):
			send(&replayItem{path: path, lineNo: n, problem: err})
			continue
		case err != nil:
			send(&replayItem{path: path, lineNo: n + 1, problem: fmt.Errorf("file ends early: %w", err)})
			return
		}
		b := pool.AcquireBuffer()
		b.B = append(b.B[:0], line...)
		send(&replayItem{path: path, lineNo: n, line: b.B, buf: b})
	}
}

// readPairDir reads the pairs under dir, in the layouts golden pairs use:
// a directory holding req.json and resp.json; NAME-request.json beside
// NAME-response.json; a NAME.json object with "request" and "response"
// members (and, as golden cases give them, "latency_ms" and "elapsed_ms").
// Other .json files are counted as malformed. Capture files in it (named
// *.jsonl, *.jsonl.gz or rotated *.jsonl.<n>) are read as captures; other
// files are ignored.
func readPairDir(dir string, send func(*replayItem)) {
	var files, captures []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			send(&replayItem{path: p, problem: err})
			return nil
		}
		switch {
		case d.IsDir():
		case strings.HasSuffix(p, ".json"):
			files = append(files, p)
		case strings.HasSuffix(p, ".jsonl") || strings.Contains(filepath.Base(p), ".jsonl."):
			captures = append(captures, p)
		}
		return nil
	})
	slices.Sort(files)
	slices.Sort(captures)
	for _, c := range captures {
		readCaptureFile(c, send)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	for _, f := range files {
		base := filepath.Base(f)
		switch {
		case base == "req.json":
			resp := filepath.Join(filepath.Dir(f), "resp.json")
			if !have[resp] {
				send(&replayItem{path: f, problem: errors.New("no resp.json beside it")})
				continue
			}
			send(readPair(filepath.Dir(f), f, resp))
		case base == "resp.json":
			if !have[filepath.Join(filepath.Dir(f), "req.json")] {
				send(&replayItem{path: f, problem: errors.New("no req.json beside it")})
			}
		case strings.HasSuffix(base, "-request.json"):
			resp := strings.TrimSuffix(f, "-request.json") + "-response.json"
			if !have[resp] {
				send(readCase(f)) // a golden case named for what it tests
				continue
			}
			send(readPair(strings.TrimSuffix(f, "-request.json"), f, resp))
		case strings.HasSuffix(base, "-response.json"):
			if !have[strings.TrimSuffix(f, "-response.json")+"-request.json"] {
				send(readCase(f))
			}
		default:
			send(readCase(f))
		}
	}
}

func readPair(where, reqPath, respPath string) *replayItem {
	it := &replayItem{path: where}
	if it.req, it.problem = os.ReadFile(reqPath); it.problem != nil {
		return it
	}
	it.resp, it.problem = os.ReadFile(respPath)
	return it
}

// readCase reads a golden case file: request, response, latency_ms,
// elapsed_ms.
func readCase(path string) *replayItem {
	it := &replayItem{path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		it.problem = err
		return it
	}
	var c struct {
		Request   json.RawMessage `json:"request"`
		Response  json.RawMessage `json:"response"`
		LatencyMs *float64        `json:"latency_ms"`
		ElapsedMs *float64        `json:"elapsed_ms"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		it.problem = fmt.Errorf("not a pair: %w", err)
		return it
	}
	if c.Request == nil || c.Response == nil {
		it.problem = errors.New("not a pair: no request and response members")
		return it
	}
	it.req, it.resp = c.Request, c.Response
	if c.LatencyMs != nil {
		it.latencyMs, it.hasLatency = *c.LatencyMs, true
	}
	if c.ElapsedMs != nil {
		it.elapsedMs, it.hasClock = *c.ElapsedMs, true
	}
	return it
}
