package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestSeatFiles: `loadtest seats` writes one file per seat, named and
// keyed like the bidder's seats, each YAML with exactly seat and one gate
// option under gateOptions; a second run replaces the first.
func TestSeatFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "seats")
	var stdout, stderr strings.Builder
	require.Equal(t, 0, run([]string{"seats", "-n", "40", "-out", dir}, &stdout, &stderr), stderr.String())
	require.Equal(t, 0, run([]string{"seats", "-n", "30", "-out", dir, "-distinct", "6"}, &stdout, &stderr), stderr.String())
	require.Equal(t, 2, run([]string{"seats", "-n", "0", "-out", dir}, &stdout, &stderr))
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 30, "the earlier 40 files are gone")
	sort.Strings(files)
	overrides := map[string]bool{}
	gates := map[string]bool{}
	for i, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal(data, &doc), f)
		want := string(newSeatNamer(30).append(nil, i+1))
		require.Equal(t, want+".yaml", filepath.Base(f))
		require.Equal(t, want, doc["seat"])
		require.Len(t, doc, 2, "seat and gateOptions only")
		opts, ok := doc["gateOptions"].(map[string]any)
		require.True(t, ok, f)
		require.Len(t, opts, 1, "one gate")
		for gate, v := range opts {
			o := v.(map[string]any)["options"].(map[string]any)
			require.Len(t, o, 1, "one option")
			gates[gate] = true
			s, _ := json.Marshal(opts)
			overrides[string(s)] = true
		}
	}
	require.Len(t, gates, len(seatOverrides), "every override kind is used")
	require.Len(t, overrides, 6, "-distinct 6")
}

// TestSeatFilesAgainstBidguard: bidguard loads a generated seats directory
// (config validate lists the seats), and an answer of 30 bids from the 30
// seats passes their policies.
func TestSeatFilesAgainstBidguard(t *testing.T) {
	bin := buildBidguard(t)
	dir := t.TempDir()
	require.NoError(t, writeSeatFiles(filepath.Join(dir, "seats"), 30, 0))
	cfg := filepath.Join(dir, "bidguard.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("seatsDir: seats/\n"), 0o644))
	out, err := exec.Command(bin, "config", "validate", "-config", cfg).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, s := range []string{"seat-00001", "seat-00030"} {
		require.Contains(t, string(out), s)
	}

	req, err := sampleRequest()
	require.NoError(t, err)
	bids, _ := parseCountDist("30", "imps")
	sh := bidShape{bids: bids, seats: 30}
	resp := answerFor(t, sh, newMix(0, nil), newBuilder(new(atomic.Uint64), priceNoise{median: 1.5, sigma: 0.3}, 30), req, 1)
	var a answerJSON
	require.NoError(t, json.Unmarshal(resp, &a))
	require.Len(t, a.Seatbid, 30)
	rq, rs := filepath.Join(dir, "req.json"), filepath.Join(dir, "resp.json")
	require.NoError(t, os.WriteFile(rq, req, 0o644))
	require.NoError(t, os.WriteFile(rs, resp, 0o644))
	out, err = exec.Command(bin, "check", "-config", cfg, "-request", rq, "-response", rs).Output()
	require.NoError(t, err, string(out))
	var rep checkReport
	require.NoError(t, json.Unmarshal(out, &rep), string(out))
	require.True(t, rep.Passed)
	require.Empty(t, rep.Warned)
}
