package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// auditKey is the key the tests write to audit.key (the golden chains' key).
const auditKey = "bidguard-golden-key-0123456789ab"

// auditLines reads every record of the log at path (all its segments) as
// JSON objects.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	files, err := filepath.Glob(path + "*")
	require.NoError(t, err)
	var out []map[string]any
	for _, f := range files {
		if f != path && !regexp.MustCompile(`\.\d{6}$`).MatchString(f) {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), "%s: %s", f, line)
			out = append(out, m)
		}
	}
	return out
}

func ofKind(recs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["kind"] == kind {
			out = append(out, r)
		}
	}
	return out
}

func TestAuditVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "audit.key")
	require.NoError(t, writeFile(key, auditKey+"\n"))
	for _, n := range []string{"audit.log", "audit.log.000002"} {
		data, err := os.ReadFile(filepath.Join("../../audit/testdata/golden-hmac", n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), data, 0o644))
	}
	log := filepath.Join(dir, "audit.log")

	code, out, errOut := runCmd("audit", "verify", "--key-file", key, log)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, `intact: 11 records in 2 complete segments, seq 1 to 11 (from the first record), 2026-01-02T03:04:05.123456789Z to 2026-01-02T03:04:15.123456789Z
gaps: 1 (3 records dropped); recoveries: 1 (57 bytes truncated)
kinds: reject 3 shadow 1 config 1 quarantine 1 release 1 gap 1 recovered 1 segment 2
head: seq 11 mac a92e04f6ea4172df70681874390d8130598669a7146ab2237306b29c73dbb763
`, out)
	code, _, _ = runCmd("audit", "verify", "--key-file", key, log, log+".000002")
	require.Equal(t, 0, code, "a glob's files are verified once")
	code, out, _ = runCmd("audit", "verify", "--key-file", key, log+".000002")
	require.Equal(t, 0, code)
	require.Contains(t, out, "earlier segments not given")

	// Anchors: heads kept elsewhere.
	const head = "a92e04f6ea4172df70681874390d8130598669a7146ab2237306b29c73dbb763"
	code, _, errOut = runCmd("audit", "verify", "--key-file", key, "--anchor", "11:"+head, log)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, os.Rename(log+".000002", filepath.Join(dir, "elsewhere")))
	code, _, errOut = runCmd("audit", "verify", "--key-file", key, log)
	require.Equal(t, 0, code, "without the anchor, a cut-off end does not show")
	code, _, errOut = runCmd("audit", "verify", "--key-file", key, "--anchor", "11:"+head, log)
	require.Equal(t, 1, code)
	require.Equal(t, log+":9: the chain ends at seq 9, before anchored seq 11: records were cut off\n", errOut)
	require.NoError(t, os.Rename(filepath.Join(dir, "elsewhere"), log+".000002"))
	code, _, errOut = runCmd("audit", "verify", "--key-file", key, "--anchor", "3:"+head, log)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, log+":3: seq 3 has mac")

	// Tampered: one digit of a price.
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(log, bytes.Replace(data, []byte(`"price_micros":2500000`), []byte(`"price_micros":2400000`), 1), 0o644))
	code, out, errOut = runCmd("audit", "verify", "--key-file", key, log)
	require.Equal(t, 1, code)
	require.Equal(t, log+":3: mac does not verify: the record was changed\n", errOut)
	require.Contains(t, out, "broken in segment 1 ("+log+" line 3); verified before the break: 2 records in 0 complete segments")
	require.NoError(t, os.WriteFile(log, data, 0o644))

	// A break in the second segment names it.
	data2, err := os.ReadFile(log + ".000002")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(log+".000002", bytes.Replace(data2, []byte(`"req_id":"req-4"`), []byte(`"req_id":"req-5"`), 1), 0o644))
	code, out, errOut = runCmd("audit", "verify", "--key-file", key, log)
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(errOut, log+".000002:2: "), errOut)
	require.Contains(t, out, "broken in segment 2 ("+log+".000002 line 2); verified before the break: ")
	require.Contains(t, out, "records in 1 complete segments")
	require.NoError(t, os.WriteFile(log+".000002", data2, 0o644))
	require.NoError(t, os.WriteFile(log, bytes.Replace(data, []byte(`"price_micros":2500000`), []byte(`"price_micros":2400000`), 1), 0o644))

	code, _, errOut = runCmd("audit", "verify", log+".000002")
	require.Equal(t, 1, code, "no key: plain SHA-256 does not verify an HMAC chain")
	require.Contains(t, errOut, "--key-file")

	for _, args := range [][]string{
		{"audit", "verify", "--key-file", key, filepath.Join(dir, "missing.log")},
		{"audit", "verify", "--key-file", filepath.Join(dir, "missing.key"), log},
		{"audit", "verify"},
		{"audit", "verify", "--bogus", log},
		{"audit", "verify", "--anchor", "11", log},
		{"audit", "verify", "--anchor", "x:" + strings.Repeat("0", 64), log},
		{"audit", "verify", "--anchor", "11:abc", log},
		{"audit"},
		{"audit", "check", log},
	} {
		code, out, errOut := runCmd(args...)
		require.Equal(t, 2, code, "%v: %s", args, errOut)
		require.Empty(t, out)
	}
}

// Each check --audit run appends its records to the chain already in the
// file: many runs verify as one chain.
func TestCheckAudit(t *testing.T) {
	dir := files(t,
		"req.json", `{"id":"r1","tmax":100,"imp":[{"id":"1","bidfloor":0.5}]}`,
		"bad.json", `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"7","price":1.25,"crid":"c1","adomain":["brand.com"]},{"id":"b2","impid":"1","price":1,"crid":"c2","adomain":["brand.com"]}]}]}`,
		"ok.json", `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b2","impid":"1","price":1,"crid":"c2","adomain":["brand.com"]}]}]}`,
		"audit.key", auditKey,
		"enforce.yaml", "audit: {keyFile: audit.key}\npolicy:\n  gates: [{gate: impidMatch}]\n",
		"shadow.yaml", "audit: {keyFile: audit.key}\npolicy:\n  action: shadow\n  gates: [{gate: impidMatch}]\n",
		"nokey.yaml", "policy:\n  gates: [{gate: impidMatch}]\n",
	)
	p := func(n string) string { return filepath.Join(dir, n) }
	log := p("checks.log")
	check := func(want int, resp, cfg string) string {
		t.Helper()
		code, out, errOut := runCmd("check", "--request", p("req.json"), "--response", p(resp), "--config", p(cfg), "--audit", log)
		require.Equal(t, want, code, errOut)
		return out
	}
	check(1, "bad.json", "enforce.yaml")
	check(0, "ok.json", "enforce.yaml")
	check(0, "bad.json", "shadow.yaml")
	check(1, "bad.json", "enforce.yaml")

	code, out, errOut := runCmd("audit", "verify", "--key-file", p("audit.key"), log)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "kinds: reject 2 shadow 1 segment 1\n")
	recs := auditLines(t, log)
	rej := ofKind(recs, "reject")[0]
	for k, v := range map[string]any{"req_id": "r1", "seat": "s", "bid_id": "b1", "crid": "c1", "adomain": []any{"brand.com"},
		"price_micros": 1250000.0, "gate": "rtb.impid-match", "reason": "bid impid not present in request", "nbr": 300.0, "loss": 3.0} {
		require.Equal(t, v, rej[k], k)
	}
	code, out, _ = runCmd("version", "--config", p("enforce.yaml"))
	require.Equal(t, 0, code)
	require.Contains(t, out, "config "+rej["policy"].(string), "policy is the config version")
	require.Equal(t, "b1", ofKind(recs, "shadow")[0]["bid_id"])

	// Another key cannot continue the chain: exit 2, nothing printed, nothing appended.
	before, err := os.ReadFile(log)
	require.NoError(t, err)
	code, out, errOut = runCmd("check", "--request", p("req.json"), "--response", p("bad.json"), "--config", p("nokey.yaml"), "--audit", log)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.True(t, strings.HasPrefix(errOut, log+": "), errOut)
	require.Contains(t, errOut, "mac does not verify")
	after, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// auditServeConfig is serve with the audit log on, polling every 20 ms.
func auditServeConfig(maxPrice string) string {
	return "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\nreloadPollMs: 20\nseatsDir: seats\n" +
		"audit: {path: audit.log, keyFile: audit.key}\n" +
		"policy:\n  gates:\n    - gate: impidMatch\n    - {gate: bidSanity, options: {maxPrice: " + maxPrice + "}}\n"
}

// startServeStoppable runs serve in process until stop, which returns its
// exit status.
func startServeStoppable(t *testing.T, config, upstream string) (served, func() int) {
	t.Helper()
	return serveInProcess(t, serveFlags{config: config, upstream: upstream})
}

// metricValue reads one series from the admin /metrics (-1 when absent).
func metricValue(t *testing.T, admin, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// serve audits every rejected bid before answering, and every config load.
func TestServeAudit(t *testing.T) {
	path := reloadConfigDir(t, auditServeConfig("10"))
	dir := filepath.Dir(path)
	require.NoError(t, writeFile(filepath.Join(dir, "audit.key"), auditKey))
	log := filepath.Join(dir, "audit.log")
	s, stop := startServeStoppable(t, path, fakeBidder(t))
	require.Contains(t, s.stderr.String(), `level=WARN msg="audit key file is readable by group or others`,
		"the key file is 0644: a warning at start-up")

	for _, state := range []string{"written", "dropped", "gap", "recovered"} {
		require.GreaterOrEqual(t, metricValue(t, s.admin, `bidguard_audit_records_total{state="`+state+`"}`), 0.0, state)
	}
	code, rejected, v1 := bid(t, s.addr)
	require.Equal(t, 200, code)
	require.Equal(t, "0", rejected)

	writeAtomic(t, path, auditServeConfig("1"))
	require.Eventually(t, func() bool { _, _, v := bid(t, s.addr); return v != v1 }, 10*time.Second, 10*time.Millisecond)
	for range 3 {
		code, rejected, _ := bid(t, s.addr)
		require.Equal(t, 204, code)
		require.Equal(t, "1", rejected)
	}
	require.Equal(t, 0, stop())

	code, out, errOut := runCmd("audit", "verify", "--key-file", filepath.Join(dir, "audit.key"), log)
	require.Equal(t, 0, code, errOut)
	recs := auditLines(t, log)
	configs := ofKind(recs, "config")
	require.Len(t, configs, 2, out)
	require.Equal(t, "startup: "+path, configs[0]["reason"])
	require.Equal(t, v1, configs[0]["policy"])
	require.Equal(t, "reload (poll): "+path, configs[1]["reason"])
	rejects := ofKind(recs, "reject")
	require.GreaterOrEqual(t, len(rejects), 3, "one per rejected bid, the bids of the reload wait included")
	for _, r := range rejects {
		require.Equal(t, "rtb.bid-sanity", r["gate"])
		require.Equal(t, configs[1]["policy"], r["policy"])
		require.Equal(t, 5_000_000.0, r["price_micros"])
		require.Equal(t, "s1", r["seat"])
		require.Equal(t, "b1", r["bid_id"])
	}
}

// Audit off: no file, the metrics registered anyway.
func TestServeAuditOff(t *testing.T) {
	path := reloadConfigDir(t, reloadServeConfig("20", "1"))
	s := startServe(t, path, fakeBidder(t))
	code, _, _ := bid(t, s.addr)
	require.Equal(t, 204, code)
	require.Equal(t, 0.0, metricValue(t, s.admin, `bidguard_audit_records_total{state="written"}`))
	require.Equal(t, 0.0, metricValue(t, s.admin, `bidguard_panics_total{where="audit"}`))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), "audit")
	}
}

func TestServeAuditStartupErrors(t *testing.T) {
	dir := files(t,
		"nokey.yaml", "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\naudit: {path: audit.log, keyFile: missing.key}\n",
		"nodir.yaml", "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\naudit: {path: nodir/audit.log}\n",
		"short.key", "short\n",
		"short.yaml", "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\naudit: {path: audit.log, keyFile: short.key}\n",
	)
	for _, cfg := range []string{"nokey.yaml", "nodir.yaml", "short.yaml"} {
		code, out, errOut := runCmd("serve", "--config", filepath.Join(dir, cfg))
		require.Equal(t, 1, code, cfg)
		require.Empty(t, out, "nothing listened")
		require.Contains(t, errOut, "audit", cfg)
	}
}

// countingMeter is an audit.Counter.
type countingMeter struct{ n atomic.Int64 }

func (c *countingMeter) Add(n int) { c.n.Add(int64(n)) }
