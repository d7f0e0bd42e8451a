package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Record types of an attack's JSON lines, in the order they are written: one
// meta, one interval per period of the run (intervalPeriod), one summary.
const (
	recMeta     = "meta"
	recInterval = "interval"
	recSummary  = "summary"
)

// Meta describes an attack.
type Meta struct {
	Type        string    `json:"type"`
	Label       string    `json:"label,omitempty"`
	Target      string    `json:"target"`
	Mode        string    `json:"mode"` // "open" (constant rate) or "closed" (maximum throughput)
	Rate        float64   `json:"rate,omitempty"`
	Connections int       `json:"connections"`
	DurationS   float64   `json:"duration_s"`
	WarmupS     float64   `json:"warmup_s,omitempty"`
	MaxRequests int64     `json:"max_requests,omitempty"`
	TimeoutS    float64   `json:"timeout_s"`
	LateAfterUs int64     `json:"late_after_us"`
	Requests    int       `json:"requests"`      // distinct request bodies
	RequestSize int       `json:"request_bytes"` // their mean size
	Source      string    `json:"source"`        // the requests file or "generated"
	Start       time.Time `json:"start"`
}

// Modes of Meta.Mode.
const (
	modeOpen   = "open"
	modeClosed = "closed"
)

// Interval is one period of a run (a second, a tenth of runs under 10 s:
// intervalPeriod): the answers completed in it.
type Interval struct {
	Type    string      `json:"type"`
	T       float64     `json:"t"` // seconds from the start to the interval's end
	Tally   Tally       `json:"tally"`
	Latency Percentiles `json:"latency"`
	Hist    string      `json:"hist"`
}

// Summary is a whole run (warmup excluded).
type Summary struct {
	Type       string        `json:"type"`
	ElapsedS   float64       `json:"elapsed_s"`  // the measured window
	Throughput float64       `json:"throughput"` // completed requests per second of the window
	Tally      Tally         `json:"tally"`
	Latency    Percentiles   `json:"latency"`
	LateShare  float64       `json:"late_share"`
	Warnings   []string      `json:"warnings,omitempty"`
	Hist       string        `json:"hist"`
	Guard      *GuardCounts  `json:"bidguard,omitempty"` // bidguard's /metrics over the run (a delta)
	Bidder     *BidderCounts `json:"bidder,omitempty"`   // the fake bidder's counts over the run (a delta)
}

// lateWarnShare is the share of late sends over which a run says that its
// load was shaped by the generator, not by the schedule.
const lateWarnShare = 0.01

// lateWarning returns the warning for a run with late sends over
// lateWarnShare, or "".
func lateWarning(late, sent int64, after time.Duration) string {
	if sent == 0 || float64(late)/float64(sent) <= lateWarnShare {
		return ""
	}
	return fmt.Sprintf("%.1f%% of sends started more than %s after their due time: the generator or its connections could not keep the schedule (latencies still count from the due times)",
		100*float64(late)/float64(sent), after)
}

// recordWriter writes JSON lines.
type recordWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newRecordWriter(w io.Writer) *recordWriter {
	bw := bufio.NewWriter(w)
	return &recordWriter{w: bw, enc: json.NewEncoder(bw)}
}

func (r *recordWriter) write(v any) error {
	if err := r.enc.Encode(v); err != nil {
		return err
	}
	return r.w.Flush()
}

// runRecords is one attack's records as read back.
type runRecords struct {
	file      string
	meta      Meta
	intervals []Interval
	summary   *Summary
}

// maxRecordLine bounds one JSON line (a summary with its histogram).
const maxRecordLine = 16 << 20

// readRun reads the JSON lines of one attack.
func readRun(path string) (*runRecords, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &runRecords{file: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxRecordLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var head struct{ Type string }
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch head.Type {
		case recMeta:
			err = json.Unmarshal(line, &r.meta)
		case recInterval:
			var iv Interval
			if err = json.Unmarshal(line, &iv); err == nil {
				r.intervals = append(r.intervals, iv)
			}
		case recSummary:
			r.summary = new(Summary)
			err = json.Unmarshal(line, r.summary)
		default:
			err = fmt.Errorf("unknown record type %q", head.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.meta.Type != recMeta {
		return nil, fmt.Errorf("%s: no meta record: not the output of loadtest attack", path)
	}
	if r.summary == nil {
		return nil, fmt.Errorf("%s: no summary record: the attack did not finish", path)
	}
	return r, nil
}
