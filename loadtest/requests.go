package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// maxRequestFileBytes bounds one requests file (a JSON-lines file may hold
// many requests); maxRequests bounds how many are kept in memory.
const (
	maxRequestFileBytes = 256 << 20
	maxRequests         = 100_000
)

// loadRequests reads bid requests from path: a directory (every *.json file
// in it, one request each, in name order), a file holding one JSON document
// (pretty-printed or not), or a file of JSON lines (one request per
// non-blank line). Each request is compacted (its whitespace removed, as on
// the wire) and must be a JSON object.
func loadRequests(path string) ([][]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return loadDir(path)
	}
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	if json.Valid(data) {
		body, err := compactObject(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return [][]byte{body}, nil
	}
	var out [][]byte
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		body, err := compactObject(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		if len(out) == maxRequests {
			return nil, fmt.Errorf("%s: more than %d requests", path, maxRequests)
		}
		out = append(out, body)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no request", path)
	}
	return out, nil
}

func loadDir(dir string) ([][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no *.json file", dir)
	}
	if len(names) > maxRequests {
		return nil, fmt.Errorf("%s: more than %d requests", dir, maxRequests)
	}
	out := make([][]byte, 0, len(names))
	for _, name := range names {
		data, err := readBounded(name)
		if err != nil {
			return nil, err
		}
		body, err := compactObject(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, body)
	}
	return out, nil
}

func readBounded(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxRequestFileBytes {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxRequestFileBytes)
	}
	return os.ReadFile(path)
}

func compactObject(data []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, fmt.Errorf("not a JSON document: %w", err)
	}
	if b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	return b.Bytes(), nil
}

// rawRequest is a whole HTTP/1.1 POST of body to t, built once and written
// as is for every send.
func rawRequest(t target, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("POST ")
	b.WriteString(t.uri)
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(t.host)
	b.WriteString("\r\nContent-Type: application/json\r\nX-Openrtb-Version: 2.6\r\nUser-Agent: bidguard-loadtest\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// meanSize is the mean length of bodies.
func meanSize(bodies [][]byte) int {
	if len(bodies) == 0 {
		return 0
	}
	n := 0
	for _, b := range bodies {
		n += len(b)
	}
	return n / len(bodies)
}

// parseRange parses "A" or "A-B" (A ≤ B) of non-negative integers, with an
// optional k suffix (×1024) on each: "2k-8k", "1-4", "120".
func parseRange(s string) (lo, hi int, err error) {
	a, b, found := strings.Cut(s, "-")
	if lo, err = parseSize(a); err != nil {
		return 0, 0, fmt.Errorf("range %q: %w", s, err)
	}
	hi = lo
	if found {
		if hi, err = parseSize(b); err != nil {
			return 0, 0, fmt.Errorf("range %q: %w", s, err)
		}
	}
	if lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("range %q: want A or A-B with 0 <= A <= B", s)
	}
	return lo, hi, nil
}

func parseSize(s string) (int, error) {
	mult := 1
	if t, ok := strings.CutSuffix(strings.ToLower(s), "k"); ok {
		s, mult = t, 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}
