package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/bid", "http://127.9.9.9/", "http://[::1]:80/x?y=1", "http://localhost:1/"} {
		_, err := parseTarget(u, false)
		require.NoError(t, err, u)
	}
	for _, u := range []string{"http://10.0.0.1/", "http://example.com/", "http://0.0.0.0:80/", "http://[::]/"} {
		_, err := parseTarget(u, false)
		require.ErrorIs(t, err, errRemote, u)
		_, err = parseTarget(u, true)
		require.NoError(t, err, u)
	}
	_, err := parseTarget("https://127.0.0.1/", false)
	require.ErrorContains(t, err, "only http://")
	tg, err := parseTarget("http://127.0.0.1:81/bid?x=1", false)
	require.NoError(t, err)
	require.Equal(t, target{addr: "127.0.0.1:81", host: "127.0.0.1:81", uri: "/bid?x=1"}, tg)
	require.ErrorIs(t, checkListen(":9000", false), errRemote)
	require.NoError(t, checkListen("127.0.0.1:0", false))
}

func TestLoadRequests(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.json")
	require.NoError(t, os.WriteFile(one, []byte("{\n  \"id\": \"a\",\n  \"imp\": [{\"id\": \"1\"}]\n}\n"), 0o644))
	got, err := loadRequests(one)
	require.NoError(t, err)
	require.Equal(t, []string{`{"id":"a","imp":[{"id":"1"}]}`}, strs(got), "a pretty-printed document is one request, compacted")

	lines := filepath.Join(dir, "lines.jsonl")
	require.NoError(t, os.WriteFile(lines, []byte("{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n"), 0o644))
	got, err = loadRequests(lines)
	require.NoError(t, err)
	require.Equal(t, []string{`{"id":"a"}`, `{"id":"b"}`}, strs(got))

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"id\":\"a\"}\n[1]\n"), 0o644))
	_, err = loadRequests(bad)
	require.ErrorContains(t, err, "bad.jsonl:2: not a JSON object")

	sub := filepath.Join(dir, "dir")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "b.json"), []byte(`{"id":"b"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "a.json"), []byte(`{"id":"a"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "notes.txt"), []byte(`x`), 0o644))
	got, err = loadRequests(sub)
	require.NoError(t, err)
	require.Equal(t, []string{`{"id":"a"}`, `{"id":"b"}`}, strs(got), "a directory: every *.json, in name order")

	raw := rawRequest(target{addr: "127.0.0.1:1", host: "127.0.0.1:1", uri: "/bid"}, []byte(`{}`))
	require.Equal(t, "POST /bid HTTP/1.1\r\nHost: 127.0.0.1:1\r\nContent-Type: application/json\r\nX-Openrtb-Version: 2.6\r\nUser-Agent: bidguard-loadtest\r\nContent-Length: 2\r\n\r\n{}", string(raw))
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestGenerateRequests(t *testing.T) {
	o := genOptions{count: 200, impsLo: 1, impsHi: 3, sizeLo: 2048, sizeHi: 4096, tmaxLo: 100, tmaxHi: 200, coppa: 0.5, seed: 3}
	reqs, err := generateRequests(o)
	require.NoError(t, err)
	require.Len(t, reqs, 200)
	coppa := 0
	for _, body := range reqs {
		require.GreaterOrEqual(t, len(body), 2048)
		require.LessOrEqual(t, len(body), 4096)
		var r struct {
			Imp  []json.RawMessage
			Tmax int
			Regs struct{ Coppa int }
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.True(t, len(r.Imp) >= 1 && len(r.Imp) <= 3)
		require.True(t, r.Tmax >= 100 && r.Tmax <= 200)
		coppa += r.Regs.Coppa
	}
	require.InDelta(t, 100, coppa, 30)
	again, err := generateRequests(o)
	require.NoError(t, err)
	require.Equal(t, reqs, again, "the same seed gives the same requests")
	_, err = generateRequests(genOptions{count: 0})
	require.Error(t, err)

	lo, hi, err := parseRange("2k-8k")
	require.NoError(t, err)
	require.Equal(t, []int{2048, 8192}, []int{lo, hi})
	_, _, err = parseRange("5-1")
	require.Error(t, err)
}

func TestForEachBidTag(t *testing.T) {
	body := []byte(`{"seatbid":[{"bid":[{"id":"ok-1","adid":"ok-1","adm":"<a \"adid\":\"bad-x-9\">"},` +
		`{"adid" : "bad-wrong-id-22"},{"adid":"foreign"},{"adid":"late-7"},{"adid":"ok-"}]}]}`)
	var tags []string
	forEachBidTag(body, func(tag []byte) { tags = append(tags, string(tag)) })
	require.Equal(t, []string{"ok", "bad-wrong-id", "late"}, tags)
}

func TestParseLatency(t *testing.T) {
	d, err := parseLatency("0")
	require.NoError(t, err)
	require.Zero(t, d.sample())
	d, err = parseLatency("5ms")
	require.NoError(t, err)
	require.Equal(t, 5*time.Millisecond, d.sample())
	d, err = parseLatency("uniform:1ms,3ms")
	require.NoError(t, err)
	for range 1000 {
		v := d.sample()
		require.True(t, v >= time.Millisecond && v <= 3*time.Millisecond)
	}
	d, err = parseLatency("lognormal:10ms,0.5")
	require.NoError(t, err)
	below := 0
	for range 4000 {
		if d.sample() < 10*time.Millisecond {
			below++
		}
	}
	require.InDelta(t, 2000, below, 200, "half the draws are under the median")
	for _, bad := range []string{"uniform:3ms,1ms", "lognormal:10ms", "gamma:1", "-1ms", "20s"} {
		_, err := parseLatency(bad)
		require.Error(t, err, bad)
	}
}
