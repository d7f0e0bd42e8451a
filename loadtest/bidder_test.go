package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fastjson"
)

// startBidder serves a fake bidder on a loopback port until the test ends.
func startBidder(t *testing.T, o bidderOptions) (*bidder, string) {
	t.Helper()
	if o.latency == "" {
		o.latency = "0"
	}
	if o.seats == 0 {
		o.seats = 2
	}
	if o.priceMedian == 0 {
		o.priceMedian, o.priceSigma = 1.5, 0.3
	}
	bd, err := newBidder(o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := bd.server(time.Minute)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return bd, "http://" + ln.Addr().String()
}

// TestShortAttackCountsEveryBid attacks a fake bidder directly for a second
// with a bad-bid mix: with no bidguard in between, every bid the bidder sent
// must be counted at the client under its tag, and the report must fail.
func TestShortAttackCountsEveryBid(t *testing.T) {
	_, base := startBidder(t, bidderOptions{bad: 0.5, late: 0.05, lateBy: time.Millisecond, nobid: 0.1, kinds: "all"})
	dir := t.TempDir()
	out := filepath.Join(dir, "run.jsonl")
	var stdout, stderr bytes.Buffer
	code := run([]string{"attack", "-target", base + "/bid", "-rate", "300", "-duration", "1s", "-connections", "8",
		"-gen-coppa", "1", "-gen-dsa", "1", "-gen-tmax", "10-20", "-bidder", base, "-out", out, "-quiet"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	r, err := readRun(out)
	require.NoError(t, err)
	s := r.summary
	require.EqualValues(t, 300, s.Tally.Completed)
	require.EqualValues(t, 300, s.Tally.OK+s.Tally.NoBid, "every request answered 2xx")
	require.NotZero(t, s.Tally.NoBid)
	require.NotEmpty(t, r.intervals)
	require.NotNil(t, s.Bidder)
	require.EqualValues(t, 300, s.Bidder.Requests)
	require.Equal(t, s.Bidder.NoBid, s.Tally.NoBid)
	for tag, n := range s.Bidder.Bids {
		require.Equal(t, n, s.Tally.Bids[tag], "tag %s: sent and received differ", tag)
	}
	require.NotZero(t, s.Bidder.Bids[tagLate])
	bad := 0
	for tag, n := range s.Tally.Bids {
		if strings.HasPrefix(tag, tagBad) {
			bad++
			require.Contains(t, s.Bidder.Gates, tag)
		}
		require.NotZero(t, n)
	}
	require.Greater(t, bad, len(kinds)/2, "a 0.5 share over 300 requests draws most kinds")

	stdout.Reset()
	require.Equal(t, 1, run([]string{"report", out}, &stdout, &stderr), "bad bids reached the client: the report fails")
	require.Contains(t, stdout.String(), ": FAIL")
}

func TestBidderCountsEndpoint(t *testing.T) {
	bd, base := startBidder(t, bidderOptions{kinds: "default"})
	body, err := httpGet(base+countsPath, false)
	require.NoError(t, err)
	var c BidderCounts
	require.NoError(t, json.Unmarshal(body, &c))
	require.Zero(t, c.Requests)
	require.Equal(t, "rtb.floor", c.Gates["bad-below-floor"])
	require.Len(t, c.Gates, len(kinds))
	require.Equal(t, bd.counts().Gates, c.Gates)
	_, err = fetchBidder(base, false)
	require.NoError(t, err)
}

func TestSelectKinds(t *testing.T) {
	def, err := selectKinds("default")
	require.NoError(t, err)
	all, err := selectKinds("all")
	require.NoError(t, err)
	require.Len(t, all, len(kinds))
	pending := 0
	for _, k := range kinds {
		if k.pending {
			pending++
		}
	}
	require.Len(t, def, len(all)-pending, "pending kinds are left out of default")
	two, err := selectKinds("below-floor, wrong-id")
	require.NoError(t, err)
	require.Equal(t, "rtb.floor", two[0].gate)
	_, err = selectKinds("nope")
	require.ErrorContains(t, err, `unknown kind "nope"`)
}

// buildBidguard builds bidguard's command for the checks below.
func buildBidguard(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bidguard")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/bidguard").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

type checkReport struct {
	Passed   bool
	Rejected []struct {
		Gate  string
		BidID string `json:"bid_id"`
	}
	Warned   []struct{ Gate string }
	Response *struct {
		Seatbid []struct{ Bid []json.RawMessage }
	}
}

func check(t *testing.T, bin, dir, name string, req, resp []byte) checkReport {
	t.Helper()
	rq, rs := filepath.Join(dir, name+".request.json"), filepath.Join(dir, name+".response.json")
	require.NoError(t, os.WriteFile(rq, req, 0o644))
	require.NoError(t, os.WriteFile(rs, resp, 0o644))
	out, err := exec.Command(bin, "check", "--request", rq, "--response", rs).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("check %s: %v", name, err)
	}
	var rep checkReport
	require.NoError(t, json.Unmarshal(out, &rep), string(out))
	return rep
}

// TestKindsAgainstCheck is the bid mix's contract with bidguard: valid bids
// pass the embedded default policy without a warning, and each bad kind is
// rejected by exactly the gate it targets (the first to reject it under
// failFast), as `bidguard check` decides.
func TestKindsAgainstCheck(t *testing.T) {
	bin := buildBidguard(t)
	dir := t.TempDir()

	typical, err := loadRequests("../gates/testdata/typical-request.json")
	require.NoError(t, err)
	resp, err := samplePair(typical[0], nil)
	require.NoError(t, err)
	require.InDelta(t, 2048, len(resp), 600, "the typical request gets an answer of about 2 KB")
	rep := check(t, bin, dir, "typical", typical[0], resp)
	require.True(t, rep.Passed)
	require.Empty(t, rep.Warned)
	bids := 0
	for _, sb := range rep.Response.Seatbid {
		bids += len(sb.Bid)
	}
	require.Equal(t, 3, bids, "one bid per imp of the typical request")

	req, err := sampleRequest()
	require.NoError(t, err)
	resp, err = samplePair(req, nil)
	require.NoError(t, err)
	rep = check(t, bin, dir, "ok", req, resp)
	require.True(t, rep.Passed, "valid bids pass on a child-directed request requiring DSA")
	require.Empty(t, rep.Warned)

	ctv, err := sampleCTVRequest()
	require.NoError(t, err)
	resp, err = samplePair(ctv, nil)
	require.NoError(t, err)
	rep = check(t, bin, dir, "ok-ctv", ctv, resp)
	require.True(t, rep.Passed, "valid video bids pass on a CTV request with pods")
	require.Empty(t, rep.Warned)

	// Every bid kind on every imp it applies to: the sample requests' imps
	// are of each media type and each ad-break shape, and a bad bid must
	// be caught in each.
	for _, k := range kinds {
		tried := 0
		for _, req := range [][]byte{req, ctv} {
			var parsed struct{ Imp []json.RawMessage }
			require.NoError(t, json.Unmarshal(req, &parsed))
			for imp := range parsed.Imp {
				if k.response && imp > 0 {
					break
				}
				resp, err := samplePairOn(req, k, imp)
				if err != nil {
					continue // the kind does not apply to this imp (or request)
				}
				tried++
				name := fmt.Sprintf("%s kind %s on imp %d", k.gate, k.name, imp)
				rep := check(t, bin, dir, k.name, req, resp)
				if k.pending && rep.Passed {
					continue // its gate is not in the embedded default policy yet
				}
				require.Len(t, rep.Rejected, 1, name)
				require.Equal(t, k.gate, rep.Rejected[0].Gate, name)
				if k.pending {
					t.Errorf("kind %s: %s now rejects it: drop pending so -kinds default includes it", k.name, k.gate)
				}
				if k.response {
					require.Empty(t, rep.Rejected[0].BidID, "kind %s rejects the response", k.name)
				} else if k.name != "no-id" && k.name != "dup-id" {
					require.True(t, strings.HasPrefix(rep.Rejected[0].BidID, k.tag+"-"), "%s: the tagged bid is the one rejected", name)
				}
			}
		}
		require.NotZero(t, tried, "kind %s applies to no imp of the sample requests", k.name)
	}
}

// TestMixDraw: each kind gets about bad/len(kinds) of the bids, and a kind
// that does not apply is sent valid and reported as a fallback.
func TestMixDraw(t *testing.T) {
	selected, err := selectKinds("default")
	require.NoError(t, err)
	m := newMix(0.5, selected)
	req, err := sampleRequest() // every kind applies to some imp of it
	require.NoError(t, err)
	var info reqInfo
	var p fastjson.Parser
	require.NoError(t, info.parse(&p, req))
	var pl plan
	b := newBuilder(new(atomic.Uint64), priceNoise{median: 1.5}, 2)
	b.seed(1)
	shape := bidShape{seats: 2}
	shape.layout(&info, &pl, b.rng)
	require.Len(t, pl.slots, len(info.imps), "one bid per imp")
	drawn := map[string]int{}
	fallbacks := map[string]int{}
	const n = 20_000
	for range n {
		m.draw(&info, &pl, b.rng, func(k *kind) { fallbacks[k.name]++ })
		if pl.resp != nil {
			drawn[pl.resp.name] += len(info.imps)
			continue
		}
		for _, s := range pl.slots {
			if s.kind != nil {
				drawn[s.kind.name]++
			}
		}
	}
	per := 0.5 * n * float64(len(info.imps)) / float64(len(selected))
	for _, k := range selected {
		got := float64(drawn[k.name] + fallbacks[k.name])
		require.InDelta(t, per, got, per*0.25, "kind %s", k.name)
	}
	require.NotZero(t, fallbacks["creative-size"], "creative-size applies to banner imps only")
	require.Zero(t, fallbacks["impid"])

	pl.late = true
	m.draw(&info, &pl, b.rng, func(*kind) { t.Fatal("a late answer holds valid bids only") })
	require.Nil(t, pl.resp)
	for _, s := range pl.slots {
		require.Nil(t, s.kind)
	}
}

func TestPriceJump(t *testing.T) {
	start := time.Unix(1000, 0)
	j, err := parseJump("seat-2:10@5m", start)
	require.NoError(t, err)
	require.Equal(t, &priceJump{seat: 2, factor: 10, at: start.Add(5 * time.Minute)}, j)
	for _, bad := range []string{"2:10@5m", "seat-0:10@1s", "seat-1:-1@1s", "seat-1:10", "seat-1:10@x", "seat-1:NaN@1s"} {
		_, err := parseJump(bad, start)
		require.Error(t, err, bad)
	}
	none, err := parseJump("", start)
	require.NoError(t, err)
	s := bidSpec{price: 1.2}
	none.apply(2, &s)
	require.Equal(t, 1.2, s.price, "no jump configured")

	due := &priceJump{seat: 2, factor: 10, at: time.Now().Add(-time.Second)}
	later := &priceJump{seat: 2, factor: 10, at: time.Now().Add(time.Hour)}
	s = bidSpec{price: 1.2}
	due.apply(1, &s)
	require.Equal(t, 1.2, s.price, "another seat")
	later.apply(2, &s)
	require.Equal(t, 1.2, s.price, "not yet due")
	due.apply(2, &s)
	require.Equal(t, 12.0, s.price)
}
