package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// GuardCounts are the bidguard metrics the report reads, summed over the
// labels not named.
type GuardCounts struct {
	Rejected       map[string]int64 `json:"rejected_by_gate,omitempty"` // bidguard_bids_rejected_total by gate
	Bids           map[string]int64 `json:"bids,omitempty"`             // bidguard_bids_total by verdict
	Requests       map[string]int64 `json:"requests,omitempty"`         // bidguard_requests_total by outcome
	UpstreamErrors map[string]int64 `json:"upstream_errors,omitempty"`  // bidguard_upstream_errors_total by kind
}

// guardSeries maps each metric read to the label it is grouped by.
var guardSeries = map[string]string{
	"bidguard_bids_rejected_total":   "gate",
	"bidguard_bids_total":            "verdict",
	"bidguard_requests_total":        "outcome",
	"bidguard_upstream_errors_total": "kind",
}

func (g *GuardCounts) of(metric string) *map[string]int64 {
	switch metric {
	case "bidguard_bids_rejected_total":
		return &g.Rejected
	case "bidguard_bids_total":
		return &g.Bids
	case "bidguard_requests_total":
		return &g.Requests
	}
	return &g.UpstreamErrors
}

// parseGuardMetrics reads the Prometheus text exposition of bidguard's
// /metrics and keeps guardSeries.
func parseGuardMetrics(r io.Reader) (*GuardCounts, error) {
	g := &GuardCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		by, ok := guardSeries[name]
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return nil, fmt.Errorf("metrics: malformed line %q", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: line %q: %w", line, err)
		}
		key, ok := labelValue(labels, by)
		if !ok {
			continue
		}
		m := g.of(name)
		if *m == nil {
			*m = map[string]int64{}
		}
		(*m)[key] += int64(v)
	}
	return g, sc.Err()
}

// labelValue returns the value of label name in `a="x",b="y"`.
func labelValue(labels, name string) (string, bool) {
	for labels != "" {
		k, rest, ok := strings.Cut(labels, `="`)
		if !ok {
			return "", false
		}
		var v strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					v.WriteByte('\n')
					continue
				}
			}
			v.WriteByte(rest[i])
		}
		if k == name {
			return v.String(), true
		}
		labels = strings.TrimPrefix(rest[min(i+1, len(rest)):], ",")
	}
	return "", false
}

// sub returns g − before, series by series.
func (g *GuardCounts) sub(before *GuardCounts) *GuardCounts {
	return &GuardCounts{
		Rejected:       subCounts(g.Rejected, before.Rejected),
		Bids:           subCounts(g.Bids, before.Bids),
		Requests:       subCounts(g.Requests, before.Requests),
		UpstreamErrors: subCounts(g.UpstreamErrors, before.UpstreamErrors),
	}
}

// subCounts returns a − b without the zero entries.
func subCounts(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// BidderCounts is what the fake bidder sent (GET /counts).
type BidderCounts struct {
	Requests  int64            `json:"requests"`            // bid requests received
	NoBid     int64            `json:"nobid"`               // answered 204
	Late      int64            `json:"late"`                // answers sent past the request's tmax
	Bids      map[string]int64 `json:"bids"`                // bids sent by tag
	Fallbacks map[string]int64 `json:"fallbacks,omitempty"` // bad kinds drawn but not applicable to the imp: sent as ok
	// Gates maps each bad tag to the result name of the gate meant to
	// reject it (not a count: copied, never subtracted).
	Gates map[string]string `json:"gates"`
}

func (b *BidderCounts) sub(before *BidderCounts) *BidderCounts {
	return &BidderCounts{
		Requests: b.Requests - before.Requests, NoBid: b.NoBid - before.NoBid, Late: b.Late - before.Late,
		Bids: subCounts(b.Bids, before.Bids), Fallbacks: subCounts(b.Fallbacks, before.Fallbacks), Gates: b.Gates,
	}
}

// httpGet fetches a loopback URL (unless allowRemote) with a short timeout.
func httpGet(raw string, allowRemote bool) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if err := checkLoopback(u.Hostname(), allowRemote); err != nil {
		return nil, fmt.Errorf("%s: %w", raw, err)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(raw)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d", raw, resp.StatusCode)
	}
	return body, nil
}

func fetchGuard(raw string, allowRemote bool) (*GuardCounts, error) {
	body, err := httpGet(raw, allowRemote)
	if err != nil {
		return nil, fmt.Errorf("bidguard metrics: %w", err)
	}
	return parseGuardMetrics(bytes.NewReader(body))
}

// fetchBidder reads the fake bidder's counts; raw is its base URL or its
// /counts URL.
func fetchBidder(raw string, allowRemote bool) (*BidderCounts, error) {
	if !strings.HasSuffix(raw, countsPath) {
		raw = strings.TrimSuffix(raw, "/") + countsPath
	}
	body, err := httpGet(raw, allowRemote)
	if err != nil {
		return nil, fmt.Errorf("bidder counts: %w", err)
	}
	var c BidderCounts
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("bidder counts: %w", err)
	}
	return &c, nil
}
