package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// mixBids are the bidder's answers of the capture tests, by request number
// mod 6: a clean bid; a price over maxPrice; an unknown impid; a seat s2
// pair, one for a casino advertiser; a clean s1 bid with an s2 bid over
// maxPrice; no bid (204, not judged, not captured).
var mixBids = []string{
	`{"id":"%[1]s","seatbid":[{"seat":"s1","bid":[{"id":"a","impid":"1","price":2,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"}]}]}`,
	`{"id":"%[1]s","seatbid":[{"seat":"s1","bid":[{"id":"a","impid":"1","price":50,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"}]}]}`,
	`{"id":"%[1]s","seatbid":[{"seat":"s1","bid":[{"id":"a","impid":"9","price":2,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"}]}]}`,
	`{"id":"%[1]s","seatbid":[{"seat":"s2","bid":[{"id":"a","impid":"1","price":2,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"},` +
		`{"id":"b","impid":"1","price":3,"crid":"d","adomain":["casino.example"],"adm":"<b>win</b>"}]}]}`,
	`{"id":"%[1]s","seatbid":[{"seat":"s1","bid":[{"id":"a","impid":"1","price":2,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"}]},` +
		`{"seat":"s2","bid":[{"id":"b","impid":"1","price":50,"crid":"d","adomain":["brand.com"],"adm":"<b>hi</b>"}]}]}`,
	"",
}

const mixRequest = `{"id":"req-%d","tmax":500,"imp":[{"id":"1","banner":{"w":300,"h":250}}],` +
	`"user":{"id":"user-secret","buyeruid":"buyer-secret"},"device":{"ip":"10.1.2.3","ifa":"ifa-secret","ua":"Mozilla"}}`

// mixBidder answers each request with the mix entry of its number.
func mixBidder(t *testing.T) string {
	t.Helper()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		n, _ := strconv.Atoi(strings.TrimPrefix(req.ID, "req-"))
		body := mixBids[n%len(mixBids)]
		if body == "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, body, req.ID)
	}))
	t.Cleanup(b.Close)
	return b.URL + "/bid"
}

const mixPolicy = "policy:\n  gates:\n    - gate: impidMatch\n    - {gate: bidSanity, options: {maxPrice: 10}}\n"

// mixStrict adds a seat policy for s2 that denies casino advertisers.
const mixStrict = mixPolicy + "seats:\n  s2:\n    addGates:\n      - gate: seatPolicy\n        options:\n" +
	"          rules: [{id: no-casino, action: deny, field: adomain, match: suffix, values: [casino.example]}]\n"

var rejectedSeries = regexp.MustCompile(`(?m)^bidguard_bids_rejected_total\{seat="[^"]*",gate="([^"]*)",nbr="\d+"\} (\d+)$`)

// rejectedByGate sums serve's bidguard_bids_rejected_total per gate.
func rejectedByGate(t *testing.T, admin string) map[string]int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	out := map[string]int{}
	for _, m := range rejectedSeries.FindAllSubmatch(body, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		if n > 0 {
			out[string(m[1])] += n
		}
	}
	return out
}

func replayJSON(t *testing.T, args ...string) *replayReport {
	t.Helper()
	code, out, errOut := runCmd(append([]string{"replay", "--json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	var r replayReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return &r
}

// A capture of serve's traffic, replayed under the same config, gives
// exactly the rejections serve made; a stricter seat policy shows exactly
// the bids it adds.
func TestReplayReproducesServe(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "bidguard.yaml")
	require.NoError(t, writeFile(cfgPath, "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\n"+
		"capture: {path: capture/auctions.jsonl, sample: 1}\n"+mixPolicy))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "capture"), 0o700))
	s, stop := startServeStoppable(t, cfgPath, mixBidder(t))
	const n = 240
	for i := range n {
		resp, err := http.Post("http://"+s.addr+"/", "application/json", strings.NewReader(fmt.Sprintf(mixRequest, i)))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	served := rejectedByGate(t, s.admin)
	require.Equal(t, map[string]int{"rtb.bid-sanity": 2 * n / 6, "rtb.impid-match": n / 6}, served)
	require.Equal(t, 0.0, metricValue(t, s.admin, `bidguard_capture_records_total{state="dropped"}`))
	require.Equal(t, 0, stop())

	capFile := filepath.Join(dir, "capture", "auctions.jsonl")
	data, err := os.ReadFile(capFile)
	require.NoError(t, err)
	require.Equal(t, n*5/6, bytes.Count(data, []byte("\n")), "every judged auction, no 204")
	for _, secret := range []string{"user-secret", "buyer-secret", "10.1.2.3", "ifa-secret"} {
		require.NotContains(t, string(data), secret, "redacted by default")
	}
	require.Contains(t, string(data), "Mozilla")

	same := replayJSON(t, "--config", cfgPath, capFile)
	require.Equal(t, n*5/6, same.Pairs)
	require.Zero(t, same.Malformed)
	require.Equal(t, served, same.Candidate.ByGate, "replay = serve")
	require.Equal(t, "capture", same.BaselineKind)
	require.Equal(t, served, same.Baseline.ByGate, "the recorded verdicts")
	require.Len(t, same.Baseline.Versions, 1, "one config judged them all")
	for v, pairs := range same.Baseline.Versions {
		require.Equal(t, same.Candidate.Version, v)
		require.Equal(t, n*5/6, pairs)
	}
	require.Empty(t, same.Difference.ByGate)
	require.Zero(t, same.NewlyRejected+same.NewlyPassed)
	require.Equal(t, map[string]int{"s1": 2 * n / 6, "s2": n / 6}, same.Candidate.BySeat)

	strict := filepath.Join(dir, "strict.yaml")
	require.NoError(t, writeFile(strict, mixStrict))
	diff := replayJSON(t, "--config", strict, "--baseline", cfgPath, "--examples", "2", capFile)
	require.Equal(t, "config", diff.BaselineKind)
	require.Equal(t, served, diff.Baseline.ByGate)
	require.Equal(t, map[string]int{"rtb.seat-policy": n / 6}, diff.Difference.ByGate, "one casino bid per fourth answer")
	require.Equal(t, map[string]int{"s2": n / 6}, diff.Difference.BySeat)
	require.Equal(t, n/6, diff.NewlyRejected)
	require.Zero(t, diff.NewlyPassed)
	require.Len(t, diff.NewlyRejectedExamples, 2)
	ex := diff.NewlyRejectedExamples[0]
	require.Equal(t, bidExample{Where: capFile + ":4", RequestID: "req-3", BidID: "b", Seat: "s2", Gate: "rtb.seat-policy",
		Reason: ex.Reason}, ex, "the first in capture order")
	require.Contains(t, ex.Reason, "no-casino")

	// The other way round: the stricter config as baseline.
	back := replayJSON(t, "--config", cfgPath, "--baseline", strict, capFile)
	require.Equal(t, n/6, back.NewlyPassed)
	require.Zero(t, back.NewlyRejected)

	// The text report and the HTML chart.
	html := filepath.Join(dir, "report.html")
	code, out, errOut := runCmd("replay", "--config", strict, "--baseline", cfgPath, "--html", html, capFile)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("pairs read: %d, malformed inputs skipped: 0", n*5/6))
	require.Regexp(t, `rtb.seat-policy\s+0\s+40\s+\+40`, out)
	require.Contains(t, out, "newly rejected: 40 bids (first 5)")
	require.Contains(t, out, "request req-3  bid b  seat s2  rtb.seat-policy: ")
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	require.Contains(t, string(page), "<svg")
	require.Regexp(t, `<rect class="cand"[^>]*><title>candidate 40</title>`, string(page))
	require.Contains(t, string(page), "rtb.seat-policy")
}

// Lines that are not records, a truncated last line and a truncated gzip
// stream are skipped and counted; the rest is replayed.
func TestReplayMalformedAndTruncated(t *testing.T) {
	dir := t.TempDir()
	good := func(id string) string {
		return `{"time":"2026-11-28T00:00:00Z","upstream":"u","latencyMs":3,"request":{"id":"` + id +
			`","imp":[{"id":"1"}]},"response":{"id":"` + id + `","seatbid":[{"seat":"s","bid":[{"id":"b","impid":"1","price":1}]}]}}`
	}
	plain := strings.Join([]string{good("r1"), "not json", `{"request":{"id":"x"}}`, good("r2"),
		`{"request":{"id":"x","imp":[{"id":"1"}]},"response":{"id":"x","seatbid":7}}`, good("r3")[:40]}, "\n")
	plainPath := filepath.Join(dir, "c.jsonl")
	require.NoError(t, writeFile(plainPath, plain))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(good("g1") + "\n" + good("g2") + "\n" + strings.Repeat(good("pad")+"\n", 50)))
	require.NoError(t, zw.Close())
	gzPath := filepath.Join(dir, "c.jsonl.gz")
	require.NoError(t, os.WriteFile(gzPath, gz.Bytes()[:gz.Len()-12], 0o600))

	r := replayJSON(t, "--config", "../../configs/bidguard.yaml", plainPath, gzPath)
	require.Equal(t, 2+2+50, r.Pairs)
	require.Equal(t, 4+1, r.Malformed)
	where := []string{}
	for _, m := range r.MalformedExamples {
		where = append(where, m.Where)
	}
	require.Equal(t, []string{plainPath + ":2", plainPath + ":3", plainPath + ":5", plainPath + ":6", gzPath + ":53"}, where)
	require.Contains(t, r.MalformedExamples[2].Problem, "response")
	require.Contains(t, r.MalformedExamples[4].Problem, "file ends early")
	require.Equal(t, "none", r.BaselineKind, "records without verdicts")

	code, out, errOut := runCmd("replay", "--config", "../../configs/bidguard.yaml", plainPath)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "malformed inputs skipped: 4 (first 4)")
	require.Contains(t, out, plainPath+":2: malformed record: ")
}

func TestReplayBadInput(t *testing.T) {
	dir := files(t, "junk.jsonl", "junk\n", "bad.yaml", "nope: 1\n")
	cfg := "../../configs/bidguard.yaml"
	f := func(want string, args ...string) {
		t.Helper()
		code, out, errOut := runCmd(append([]string{"replay"}, args...)...)
		require.Equal(t, 2, code, errOut)
		require.Empty(t, out)
		require.Contains(t, errOut, want)
	}
	f("--config is required", filepath.Join(dir, "junk.jsonl"))
	f("no capture file", "--config", cfg)
	f("no such file", "--config", cfg, filepath.Join(dir, "missing.jsonl"))
	f("nope", "--config", filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "junk.jsonl"))
	f("nope", "--config", cfg, "--baseline", filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "junk.jsonl"))
	f("no pair could be read (1 malformed)", "--config", cfg, filepath.Join(dir, "junk.jsonl"))
	f("flag provided but not defined", "--bogus")
	// -h is not a usage error: the usage and flags on stdout, exit 0.
	code, out, errOut := runCmd("replay", "-h")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "bidguard replay --config FILE")
	require.Contains(t, out, "  -baseline string")
}

// A directory of pairs is the batch form of check: the same verdicts.
func TestReplayPairDirectory(t *testing.T) {
	dir := t.TempDir()
	pair := filepath.Join(dir, "one")
	require.NoError(t, os.MkdirAll(pair, 0o755))
	req := `{"id":"r","imp":[{"id":"1"}]}`
	resp := `{"id":"r","seatbid":[{"seat":"s","bid":[{"id":"b","impid":"2","price":1}]}]}`
	require.NoError(t, writeFile(filepath.Join(pair, "req.json"), req))
	require.NoError(t, writeFile(filepath.Join(pair, "resp.json"), resp))
	require.NoError(t, writeFile(filepath.Join(dir, "x-request.json"), req))
	require.NoError(t, writeFile(filepath.Join(dir, "x-response.json"), strings.Replace(resp, `"2"`, `"1"`, 1)))
	require.NoError(t, writeFile(filepath.Join(dir, "case.json"), `{"description":"d","request":`+req+`,"response":`+resp+`,"latency_ms":5}`))
	require.NoError(t, writeFile(filepath.Join(dir, "notes.txt"), "ignored"))
	require.NoError(t, writeFile(filepath.Join(dir, "other.json"), `{"a":1}`))
	require.NoError(t, writeFile(filepath.Join(dir, "cap.jsonl.000001"), `{"request":`+req+`,"response":`+resp+"}\n"))
	r := replayJSON(t, "--config", "../../configs/bidguard.yaml", dir)
	require.Equal(t, 4, r.Pairs, "three pairs and a capture file's record")
	require.Equal(t, 1, r.Malformed)
	require.Equal(t, filepath.Join(dir, "other.json"), r.MalformedExamples[0].Where)

	// check on each pair agrees.
	rejected := 0
	for _, p := range [][2]string{{filepath.Join(pair, "req.json"), filepath.Join(pair, "resp.json")},
		{filepath.Join(dir, "x-request.json"), filepath.Join(dir, "x-response.json")}} {
		code, _, _ := runCmd("check", "--config", "../../configs/bidguard.yaml", "--request", p[0], "--response", p[1])
		if code == 1 {
			rejected++
		}
	}
	require.Equal(t, rejected+2, r.Candidate.BidsRejected, "the case file and the capture hold the first pair")
	require.Equal(t, rejected+2, r.Candidate.ByGate["rtb.impid-match"]+r.Candidate.ByGate["rtb.required-fields"]+
		r.Candidate.ByGate["rtb.adomain-verify"]+r.Candidate.ByGate["rtb.bid-sanity"])
}

// Names counted come from memory reused for the next input: the tally keeps
// copies, also for names it has seen before.
func TestTallyCopiesNames(t *testing.T) {
	buf := []byte("seat-1gate-1")
	seat, gate := unsafe.String(&buf[0], 6), unsafe.String(&buf[6], 6)
	tl := newTally()
	for range 2 {
		tl.add([]bidVerdict{{failed: true, seat: seat, gate: gate}}, false)
	}
	copy(buf, "XXXXXXXXXXXX")
	require.Equal(t, map[string]int{"seat-1": 2}, tl.BySeat)
	require.Equal(t, map[string]int{"gate-1": 2}, tl.ByGate)
}
