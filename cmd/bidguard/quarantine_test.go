package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/internal/testserve"
	"github.com/bidguard/bidguard/quarantine"
	"github.com/bidguard/bidguard/rtb"
)

// The end-to-end quarantine: a fake bidder answers every request with one
// bid per seat (s1, s2, s3) that passes the default policy; halfway, s1's
// prices jump tenfold (a decimal-point bug).

const quarantineReq = `{"id":"r1","tmax":500,"cur":["USD"],"imp":[{"id":"1","banner":{"w":300,"h":250},"bidfloor":0.5}]}`

// jumpingBidder is the fake bidder; jump multiplies s1's prices by ten.
type jumpingBidder struct {
	url  string
	jump atomic.Bool
	n    atomic.Int64
}

func newJumpingBidder(t *testing.T) *jumpingBidder {
	b := &jumpingBidder{}
	srv := testbidder.HTTP(t, func(w http.ResponseWriter, r *http.Request) {
		n := b.n.Add(1)
		var bids []string
		for _, seat := range []string{"s1", "s2", "s3"} {
			price := 1 + 0.05*float64(n%7)
			if seat == "s1" && b.jump.Load() {
				price *= 10
			}
			bids = append(bids, fmt.Sprintf(`{"seat":%q,"bid":[{"id":"b-%s","impid":"1","price":%g,"crid":"cr-%s-%d","adomain":["brand-%s.com"],"adm":"<div>ad</div>","w":300,"h":250,"mtype":1}]}`,
				seat, seat, price, seat, n%3, seat))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"r1","cur":"USD","seatbid":[`+strings.Join(bids, ",")+`]}`)
	})
	b.url = srv.URL + "/bid"
	return b
}

// exchangeAnswer is what the exchange sees of one answer: the seats of the
// bids that passed, and each seat-non-bid as "<seat>: <reason>".
type exchangeAnswer struct {
	status int
	passed []string
	nonbid []string
}

func postBid(t *testing.T, addr string) exchangeAnswer {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(quarantineReq))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := exchangeAnswer{status: resp.StatusCode}
	if resp.StatusCode != 200 {
		return a
	}
	var doc struct {
		SeatBid []struct {
			Seat string `json:"seat"`
		} `json:"seatbid"`
		Ext struct {
			SeatNonBid []struct {
				Seat   string `json:"seat"`
				NonBid []struct {
					Ext struct {
						Bidguard struct {
							Reason string `json:"reason"`
						} `json:"bidguard"`
					} `json:"ext"`
				} `json:"nonbid"`
			} `json:"seatnonbid"`
		} `json:"ext"`
	}
	require.NoError(t, json.Unmarshal(body, &doc), string(body))
	for _, sb := range doc.SeatBid {
		a.passed = append(a.passed, sb.Seat)
	}
	for _, sn := range doc.Ext.SeatNonBid {
		for _, nb := range sn.NonBid {
			a.nonbid = append(a.nonbid, sn.Seat+": "+nb.Ext.Bidguard.Reason)
		}
	}
	return a
}

func quarantineConfig(dir, window, baseline, dwell, ttl, minSamples, extra string) string {
	return "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\nadmin: {tokenFile: token}\n" +
		"audit: {path: audit.log, keyFile: audit.key}\npolicy: {seatNonBid: true}\n" +
		"quarantine: {enabled: true, window: " + window + ", baselineWindow: " + baseline + ", dwell: " + dwell +
		", ttl: " + ttl + ", calm: 0s, minSamples: " + minSamples + ", maxShare: 0.5" + extra + "}\n"
}

// Through the sidecar, on a fake clock: one request a second for five
// minutes, then s1's prices jump tenfold. s1 is quarantined once the signal
// has been over for the dwell; from then on its bids are rejected with
// "seat quarantined: price" and the other seats' bids pass. The operator
// releases it through the admin endpoint; both transitions are audited and
// metered.
func TestQuarantineEndToEnd(t *testing.T) {
	bidder := newJumpingBidder(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "bidguard.yaml")
	require.NoError(t, writeFile(path, quarantineConfig(dir, "1m", "10m", "30s", "5m", "20", "")+
		"upstreams: [{name: dsp, url: '"+bidder.url+"', path: /}]\n"))
	require.NoError(t, writeFile(filepath.Join(dir, "token"), "op-token\n"))
	require.NoError(t, writeFile(filepath.Join(dir, "audit.key"), auditKey))

	// serve's wiring, on a clock of the test's.
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func() { mu.Lock(); now = now.Add(time.Second); mu.Unlock() }
	var logBuf testserve.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	snap, err := loadSnapshot(path)
	require.NoError(t, err)
	var holder engine.Holder
	quar := newQuarantineWiring(path, &holder, log, clock)
	quar.attach(snap)
	holder.Store(snap)
	srv, err := rtb.New(&holder, rtb.Options{Version: "test", Logger: log, Judged: quar.judged, Quarantine: quar.handler()})
	require.NoError(t, err)
	quar.register(srv.Metrics())
	aud, err := openAudit(path, snap.Config, auditMeters(srv.Metrics()), log, false, 0)
	require.NoError(t, err)
	quar.audit = aud
	require.NoError(t, quar.update(snap))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	go func() { _ = srv.ServeAdmin(aln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	addr, admin := ln.Addr().String(), aln.Addr().String()

	second := func() exchangeAnswer {
		a := postBid(t, addr)
		advance()
		quar.d.Tick()
		return a
	}
	all := []string{"s1", "s2", "s3"}
	for range 300 {
		a := second()
		require.Equal(t, 200, a.status)
		require.Equal(t, all, a.passed)
	}
	bidder.jump.Store(true)
	quarantinedAfter := 0
	for i := 1; i <= 60 && quar.d.Quarantined("dsp", "s1") == ""; i++ {
		a := second()
		require.Equal(t, all, a.passed, "a tenfold price passes the gates: only the detector sees it")
		quarantinedAfter = i
	}
	require.Equal(t, "price", quar.d.Quarantined("dsp", "s1"))
	require.GreaterOrEqual(t, quarantinedAfter, 30, "the dwell holds")
	require.LessOrEqual(t, quarantinedAfter, 35, "quarantined within the dwell of the jump being seen")
	for range 10 {
		a := second()
		require.Equal(t, 200, a.status)
		require.Equal(t, []string{"s2", "s3"}, a.passed, "the other seats are untouched")
		require.Equal(t, []string{"s1: seat quarantined: price"}, a.nonbid)
	}
	require.Equal(t, 1.0, metricValue(t, admin, "bidguard_quarantined_seats"))
	require.Equal(t, 1.0, metricValue(t, admin, `bidguard_quarantine_transitions_total{signal="price",to="quarantined"}`))
	require.Equal(t, 0.0, metricValue(t, admin, `bidguard_quarantine_transitions_total{signal="novelty",to="refused"}`), "registered up front")

	// The admin endpoints: the state, then the operator's release.
	adminDo := func(method, p, token string) (int, []byte) {
		req, err := http.NewRequest(method, "http://"+admin+p, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, _ := adminDo("GET", "/quarantine", "")
	require.Equal(t, 401, code)
	code, _ = adminDo("POST", "/quarantine/s1/release", "wrong")
	require.Equal(t, 401, code)
	code, body := adminDo("GET", "/quarantine", "op-token")
	require.Equal(t, 200, code)
	var st quarantine.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, 3, st.ActiveSeats)
	require.Equal(t, "s1", st.Seats[0].Seat)
	require.Equal(t, "quarantined", st.Seats[0].State)
	require.Equal(t, "price", st.Seats[0].Signal)
	require.Equal(t, "normal", st.Seats[1].State)
	code, _ = adminDo("POST", "/quarantine/s1/release", "op-token")
	require.Equal(t, 200, code)
	a := second()
	require.Equal(t, all, a.passed, "released")
	require.Equal(t, 0.0, metricValue(t, admin, "bidguard_quarantined_seats"))
	require.Equal(t, 1.0, metricValue(t, admin, `bidguard_quarantine_transitions_total{signal="price",to="released"}`))

	require.NoError(t, aud.Close())
	recs := auditLines(t, filepath.Join(dir, "audit.log"))
	q, r := ofKind(recs, "quarantine"), ofKind(recs, "release")
	require.Len(t, q, 1)
	require.Equal(t, "s1", q[0]["seat"])
	require.Equal(t, "rtb.quarantine", q[0]["gate"])
	require.Regexp(t, `^price: \d+(\.\d+)? over threshold 1.8 for 30s$`, q[0]["reason"])
	require.Equal(t, snap.Version, q[0]["policy"])
	require.Len(t, r, 1)
	require.Equal(t, "price: released by an operator", r[0]["reason"])
	require.Contains(t, logBuf.String(), "quarantine detector starting clean")
}

// countsAsRejection: the quarantine gate's own rejections never count (a
// quarantine would feed itself), nor warn-mode hits; shadow would-be
// rejections do.
func TestJudgedRejections(t *testing.T) {
	req := []byte(`{"id":"r1","imp":[{"id":"1"}]}`)
	resp := []byte(`{"id":"r1","seatbid":[{"seat":"a","bid":[{"id":"1","impid":"1","price":1},{"id":"2","impid":"9","price":1}]},` +
		`{"seat":"b","bid":[{"id":"3","impid":"1","price":1},{"id":"4","impid":"9","price":1}]}]}`)
	for _, tc := range []struct {
		name, config string
		want         [2]bool // bid 2 (seat a), bid 4 (seat b) counted as rejected
	}{
		{"enforced", "", [2]bool{true, true}},
		{"shadow seat", "seats: {b: {action: shadow}}\n", [2]bool{true, true}},
		{"warn mode", "seats: {b: {gateOptions: {rtb.impid-match: {mode: warn}}}}\n", [2]bool{true, false}},
		{"quarantine gate", "quarantine: {seats: [b]}\n", [2]bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// quarantine first: with seat b listed, it removes both of b's
			// bids, and failFast skips impidMatch for them.
			cfgText := tc.config + "policy:\n  gates: [{gate: quarantine}, {gate: impidMatch}]\n"
			cfg, err := config.Parse("x.yaml", []byte(cfgText))
			require.NoError(t, err)
			snap, err := engine.Compile(cfg, "x.yaml", []byte(cfgText), gates.Builtin())
			require.NoError(t, err)
			q := newQuarantineWiring("", nil, slog.New(slog.DiscardHandler), nil)
			set := quarantineSettings(snap)
			set.Enabled = true
			require.NoError(t, q.d.Update(set))
			rep, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{LatencyMs: -1})
			require.NoError(t, err)
			defer engine.ReleaseEval(ev)
			require.NotEmpty(t, append(rep.Rejected, rep.Warned...))
			q.judged("", snap, ev, &ev.Out)
			q.d.Tick()
			got := map[string]uint32{}
			for _, s := range q.d.Status().Seats {
				got[s.Seat] = s.Bids
			}
			require.Equal(t, map[string]uint32{"a": 2, "b": 2}, got, "every bid observed, the quarantined seat's too")
			rates := rejectionRates(q.d.Status())
			want := map[string]float64{"a": 0, "b": 0}
			if tc.want[0] {
				want["a"] = 0.5
			}
			if tc.want[1] {
				want["b"] = 0.5
			}
			require.Equal(t, want, rates)
		})
	}
}

func rejectionRates(st quarantine.Status) map[string]float64 {
	out := map[string]float64{}
	for _, s := range st.Seats {
		for _, sig := range s.Signals {
			if sig.Signal == "rejections" {
				out[s.Seat] = sig.Value
			}
		}
	}
	return out
}

func TestQuarantineSettings(t *testing.T) {
	text := "upstreams: [{name: dsp-a, url: 'http://127.0.0.1:1/'}]\n" +
		"quarantine: {enabled: true, window: 2m, dwell: 0s, seats: [x, dsp-a/y], thresholds: {price: 4}}\n" +
		"seats:\n  s1: {quarantine: {price: 20}}\n  dsp-a/s2: {quarantine: {novelty: 1}}\n  s3: {failFast: false}\n"
	cfg, err := config.Parse("x.yaml", []byte(text))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "x.yaml", []byte(text), gates.Builtin())
	require.NoError(t, err)
	s := quarantineSettings(snap)
	require.True(t, s.Enabled)
	require.Equal(t, 2*time.Minute, s.Window)
	require.Equal(t, time.Hour, s.BaselineWindow)
	require.Zero(t, s.Dwell)
	require.Equal(t, 100, s.MinSamples)
	require.Equal(t, quarantine.Thresholds{Rejections: 0.5, Price: 4, Novelty: 0.8, Velocity: 10}, s.Thresholds)
	require.Equal(t, map[string]quarantine.Thresholds{
		"s1":       {Rejections: 0.5, Price: 20, Novelty: 0.8, Velocity: 10},
		"dsp-a/s2": {Rejections: 0.5, Price: 4, Novelty: 1, Velocity: 10},
	}, s.Overrides)
	require.Equal(t, []string{"x", "dsp-a/y"}, s.Operator)
	require.Equal(t, []string{"dsp-a/s2"}, s.Qualified)
	require.Equal(t, snap.Version, s.Version)
	require.NoError(t, newQuarantineWiring("", nil, slog.New(slog.DiscardHandler), nil).update(snap))
}

// The admin token: no tokenFile, a missing file, an oversized one; a
// relative path resolves against the config file; whitespace is trimmed.
func TestQuarantineToken(t *testing.T) {
	dir := t.TempDir()
	mk := func(tokenFile string) *quarantineWiring {
		text := "admin: {tokenFile: '" + tokenFile + "'}\n"
		cfg, err := config.Parse("x.yaml", []byte(text))
		require.NoError(t, err)
		snap, err := engine.Compile(cfg, "x.yaml", []byte(text), gates.Builtin())
		require.NoError(t, err)
		var h engine.Holder
		h.Store(snap)
		return newQuarantineWiring(filepath.Join(dir, "bidguard.yaml"), &h, slog.New(slog.DiscardHandler), nil)
	}
	_, err := mk("").token()
	require.ErrorIs(t, err, quarantine.ErrNoToken)
	_, err = mk("missing").token()
	require.ErrorContains(t, err, "admin.tokenFile: open "+filepath.Join(dir, "missing"))
	require.NoError(t, writeFile(filepath.Join(dir, "tok"), "  abc \n"))
	tok, err := mk("tok").token()
	require.NoError(t, err)
	require.Equal(t, "abc", string(tok))
	require.NoError(t, writeFile(filepath.Join(dir, "big"), strings.Repeat("x", maxTokenBytes+1)))
	_, err = mk(filepath.Join(dir, "big")).token()
	require.ErrorContains(t, err, "larger than 4096 bytes")
}

// serve itself, on the real clock with windows of 600 ms: the detector
// runs on its own ticker, quarantines s1 after its prices jump, and the
// admin endpoint answers only with the token.
func TestServeQuarantine(t *testing.T) {
	bidder := newJumpingBidder(t)
	path := reloadConfigDir(t, quarantineConfig("", "600ms", "3s", "300ms", "1m", "10", ", thresholds: {velocity: 1000}"))
	dir := filepath.Dir(path)
	require.NoError(t, writeFile(filepath.Join(dir, "token"), "op-token\n"))
	require.NoError(t, writeFile(filepath.Join(dir, "audit.key"), auditKey))
	s, stop := startServeStoppable(t, path, bidder.url)

	adminGet := func(token string) (int, quarantine.Status) {
		req, err := http.NewRequest("GET", "http://"+s.admin+"/quarantine", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var st quarantine.Status
		if resp.StatusCode == 200 {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		}
		return resp.StatusCode, st
	}
	code, _ := adminGet("")
	require.Equal(t, 401, code)

	start := time.Now()
	quarantined := false
	for !quarantined && time.Since(start) < 60*time.Second {
		if time.Since(start) > 3*time.Second {
			bidder.jump.Store(true)
		}
		a := postBid(t, s.addr)
		require.Equal(t, 200, a.status)
		if len(a.nonbid) > 0 {
			require.Equal(t, []string{"s1: seat quarantined: price"}, a.nonbid)
			require.Equal(t, []string{"s2", "s3"}, a.passed)
			quarantined = true
		}
	}
	require.True(t, quarantined, "stderr: %s", s.stderr.String())
	code, st := adminGet("op-token")
	require.Equal(t, 200, code)
	require.Equal(t, 1, st.QuarantinedSeats)
	require.Equal(t, "s1", st.Seats[0].Seat)
	// The detector counts a transition after it is in force (its event
	// follows the state change), so a bid may see it first.
	require.Eventually(t, func() bool {
		return metricValue(t, s.admin, `bidguard_quarantine_transitions_total{signal="price",to="quarantined"}`) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 0, stop())
	require.Contains(t, s.stderr.String(), "quarantine detector starting clean")
	require.Len(t, ofKind(auditLines(t, filepath.Join(dir, "audit.log")), "quarantine"), 1)
}

// judgedFixture is a detector that knows the three seats of a judged
// response with a rejection and a warning.
func judgedFixture(tb testing.TB) (*quarantineWiring, *engine.Snapshot, *engine.Eval) {
	text := "quarantine: {enabled: true}\npolicy:\n  gates: [{gate: impidMatch}, {gate: bidSanity, mode: warn, options: {maxPrice: 1}}, {gate: quarantine}]\n"
	cfg, err := config.Parse("x.yaml", []byte(text))
	require.NoError(tb, err)
	snap, err := engine.Compile(cfg, "x.yaml", []byte(text), gates.Builtin())
	require.NoError(tb, err)
	q := newQuarantineWiring("", nil, slog.New(slog.DiscardHandler), nil)
	q.attach(snap)
	require.NoError(tb, q.update(snap))
	req := []byte(`{"id":"r1","imp":[{"id":"1"}]}`)
	resp := []byte(`{"id":"r1","seatbid":[{"seat":"s1","bid":[{"id":"b1","impid":"7","price":1,"crid":"c1","adomain":["a.com"]},` +
		`{"id":"b2","impid":"1","price":2,"crid":"c2","adomain":["a.com"]}]},{"seat":"s2","bid":[{"id":"b3","impid":"1","price":0.5,"crid":"c3","adomain":["b.com"]}]},` +
		`{"seat":"s3","bid":[{"id":"b4","impid":"1","price":0.5,"crid":"c4","adomain":["c.com","d.com"]}]}]}`)
	_, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{})
	require.NoError(tb, err)
	require.Len(tb, ev.Out.Rejected, 1)
	require.Len(tb, ev.Out.Warned, 1)
	q.judged("dsp", snap, ev, &ev.Out)
	q.d.Tick() // the seats join the index
	return q, snap, ev
}

// quarantine.seats in serve, with the detector off: the listed seat's bids
// are rejected, the release endpoint refuses it, removing it from the
// config releases it; both transitions are audited. Without
// admin.tokenFile the endpoints answer 403.
func TestServeOperatorSeatsAndReload(t *testing.T) {
	bidder := newJumpingBidder(t)
	cfg := func(seats, admin string) string {
		return "listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\nreloadPollMs: 20\n" + admin +
			"audit: {path: audit.log, keyFile: audit.key}\npolicy: {seatNonBid: true}\nquarantine: {seats: [" + seats + "]}\n"
	}
	path := reloadConfigDir(t, cfg("s2", "admin: {tokenFile: token}\n"))
	dir := filepath.Dir(path)
	require.NoError(t, writeFile(filepath.Join(dir, "token"), "op-token\n"))
	require.NoError(t, writeFile(filepath.Join(dir, "audit.key"), auditKey))
	s, stop := startServeStoppable(t, path, bidder.url)

	a := postBid(t, s.addr)
	require.Equal(t, []string{"s1", "s3"}, a.passed)
	require.Equal(t, []string{"s2: seat quarantined: operator"}, a.nonbid)
	require.Equal(t, 1.0, metricValue(t, s.admin, "bidguard_quarantined_seats"))
	require.Equal(t, 1.0, metricValue(t, s.admin, `bidguard_quarantine_transitions_total{signal="operator",to="quarantined"}`))
	post := func(p, token string) int {
		req, err := http.NewRequest("POST", "http://"+s.admin+p, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 409, post("/quarantine/s2/release", "op-token"))
	require.Equal(t, 404, post("/quarantine/s1/release", "op-token"))

	writeAtomic(t, path, cfg("", ""))
	require.Eventually(t, func() bool { return len(postBid(t, s.addr).nonbid) == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"s1", "s2", "s3"}, postBid(t, s.addr).passed)
	require.Equal(t, 0.0, metricValue(t, s.admin, "bidguard_quarantined_seats"))
	require.Equal(t, 403, post("/quarantine/s2/release", "op-token"), "no admin.tokenFile: closed")
	require.Equal(t, 0, stop())

	recs := auditLines(t, filepath.Join(dir, "audit.log"))
	q, r := ofKind(recs, "quarantine"), ofKind(recs, "release")
	require.Len(t, q, 1)
	require.Equal(t, "s2", q[0]["seat"])
	require.Equal(t, "operator: listed in quarantine.seats", q[0]["reason"])
	require.Len(t, r, 1)
	require.Equal(t, "operator: removed from quarantine.seats", r[0]["reason"])
	require.Contains(t, s.stderr.String(), "quarantine detector off")
}
