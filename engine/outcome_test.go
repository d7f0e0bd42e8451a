package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
)

// judge runs check on the pair (pairReq, pairResp unless resp is given) and
// returns the Eval, released at the end of the test.
func judge(t *testing.T, snap *engine.Snapshot, opt engine.CheckOptions) *engine.Eval {
	t.Helper()
	_, ev, err := engine.Check(snap, []byte(pairReq), []byte(pairResp), opt)
	require.NoError(t, err)
	t.Cleanup(func() { engine.ReleaseEval(ev) })
	return ev
}

// gateOf returns policy key's gate entry named name.
func gateOf(t *testing.T, snap *engine.Snapshot, key, name string) *engine.GateEntry {
	t.Helper()
	for _, p := range snap.Policies() {
		if p.Key != key {
			continue
		}
		for _, g := range p.Gates {
			if g.Name == name {
				return g
			}
		}
	}
	t.Fatalf("no gate %s in policy %s", name, key)
	return nil
}

// TestOutcomeVerdicts: one verdict per bid, in response order, with the
// rejecting gate's identity and codes; would-be rejections under action:
// shadow and warn-mode hits warn without removing anything.
func TestOutcomeVerdicts(t *testing.T) {
	snap := snapshot(t, "policy:\n  failFast: false\n  gates: [{gate: bidSanity, options: {maxPrice: 10}}, {gate: impidMatch, mode: warn},"+
		" {gate: latency, mode: warn, options: {maxMs: 10}}]\nseats:\n  \"777\": {action: shadow}\n")
	out := &judge(t, snap, engine.CheckOptions{LatencyMs: 50}).Out
	require.Len(t, out.Bids, 3)

	b1, b2, b3 := &out.Bids[0], &out.Bids[1], &out.Bids[2]
	require.Equal(t, engine.StatusPassed, b1.Status())
	require.True(t, b1.Kept)
	require.False(t, b1.Failed())
	require.Equal(t, snap.Default, b1.Policy)

	require.Equal(t, engine.StatusRejected, b2.Status())
	require.False(t, b2.Kept)
	require.Equal(t, engine.Rejection{Gate: gateOf(t, snap, "default", "rtb.bid-sanity"), Name: "rtb.bid-sanity",
		Reason: "bid missing price", Loss: 9, NBR: 300}, b2.Rejection)
	require.Equal(t, 1, b2.Warnings, "impidMatch in mode warn")
	require.True(t, b2.Warned())

	require.Equal(t, engine.StatusWarned, b3.Status())
	require.True(t, b3.Kept, "action: shadow removes nothing")
	require.True(t, b3.WouldReject())
	require.False(t, b3.Rejected())
	require.Equal(t, "777", b3.Policy.Key)
	require.Same(t, gateOf(t, snap, "777", "rtb.bid-sanity"), b3.Rejection.Gate)
	require.Equal(t, 0, b3.Warnings)

	require.False(t, out.Response.Failed())
	require.Equal(t, 1, out.Response.Warnings, "latency in mode warn")
	require.Equal(t, engine.StatusWarned, out.Response.Status())
	require.Equal(t, 2, out.Kept)
	require.Equal(t, engine.Filter, out.Action)
	require.False(t, out.Passed())

	// The hit lists: rejections first, then the warned hits.
	require.Equal(t, 4, out.NumHits())
	var got []brief
	var rejected []bool
	for i := range out.NumHits() {
		h, r := out.Hit(i)
		got = append(got, brief{h.BidID, h.Gate, h.Reason})
		rejected = append(rejected, r)
	}
	require.Equal(t, []brief{{"b2", "rtb.bid-sanity", "bid missing price"}, {"b2", "rtb.impid-match", "bid impid not present in request"},
		{"b3", "rtb.bid-sanity", "bid price 40 exceeds maxPrice 10"}, {"", "latency", "latency 50ms exceeds 10ms threshold"}}, got)
	require.Equal(t, []bool{true, false, false, false}, rejected)
}

// TestOutcomeFirstRejection: a bid's verdict is its first rejection; --all
// lists the later ones but does not change the verdict.
func TestOutcomeFirstRejection(t *testing.T) {
	snap := snapshot(t, "policy:\n  failFast: false\n  gates: [{gate: impidMatch}, {gate: bidSanity}]\n")
	for _, all := range []bool{false, true} {
		out := &judge(t, snap, engine.CheckOptions{All: all}).Out
		require.Equal(t, "rtb.impid-match", out.Bids[1].Rejection.Name, "all %v", all)
		require.Same(t, snap.Default.Gates[0], out.Bids[1].Rejection.Gate)
		require.Equal(t, 2, out.Kept)
		listed := 1
		if all {
			listed = 2
		}
		require.Len(t, out.Rejected, listed)
	}
}

// TestOutcomeResponseVerdicts: a response rejected as a whole removes every
// bid; its verdict names the gate, the tmaxGuard entry for a deadline, no
// gate for limits.maxBids.
func TestOutcomeResponseVerdicts(t *testing.T) {
	t.Run("gate", func(t *testing.T) {
		snap := snapshot(t, "policy:\n  failFast: false\n  gates: [{gate: impidMatch}, {gate: latency, options: {maxMs: 10}}]\n")
		out := &judge(t, snap, engine.CheckOptions{LatencyMs: 50}).Out
		require.True(t, out.Response.Rejected())
		require.Same(t, gateOf(t, snap, "default", "latency"), out.Response.Rejection.Gate)
		require.Equal(t, 0, out.Kept)
		require.Equal(t, engine.NoBid, out.Action)
		for i := range out.Bids {
			require.False(t, out.Bids[i].Kept, "bid %d", i)
		}
		require.Equal(t, "rtb.impid-match", out.Bids[1].Rejection.Name, "the bid's own rejection stays its verdict")
		require.False(t, out.Bids[0].Failed())
	})
	t.Run("shadow", func(t *testing.T) {
		snap := snapshot(t, "policy:\n  action: shadow\n  gates: [{gate: latency, options: {maxMs: 10}}]\n")
		out := &judge(t, snap, engine.CheckOptions{LatencyMs: 50}).Out
		require.True(t, out.Response.WouldReject())
		require.Equal(t, 3, out.Kept)
		require.True(t, out.Passed())
	})
	t.Run("deadline", func(t *testing.T) {
		snap := snapshot(t, "policy:\n  gates: [{gate: tmaxGuard}, {gate: impidMatch}]\n")
		out := &judge(t, snap, engine.CheckOptions{ElapsedMs: 1000}).Out
		require.True(t, out.DeadlineHit)
		require.True(t, out.Response.Rejected())
		r := out.Response.Rejection
		require.Same(t, gateOf(t, snap, "default", "rtb.tmax-guard"), r.Gate)
		require.Equal(t, [2]int{2, 101}, [2]int{r.Loss, r.NBR})
	})
	t.Run("bids limit", func(t *testing.T) {
		snap := snapshot(t, "limits: {maxBids: 2}\npolicy:\n  gates: [{gate: impidMatch}]\n")
		out := &judge(t, snap, engine.CheckOptions{}).Out
		require.Empty(t, out.Bids)
		require.True(t, out.Response.Rejected())
		require.Nil(t, out.Response.Rejection.Gate)
		require.Equal(t, engine.GateBidsLimit, out.Response.Rejection.Name)
		require.False(t, out.Passed())
	})
}

// TestEnforcesQuarantine: the quarantine gate is known by what it is, under
// any name; no other gate is.
func TestEnforcesQuarantine(t *testing.T) {
	snap := snapshot(t, "policy:\n  gates: [{gate: quarantine, name: q1}, {gate: impidMatch, name: rtb.quarantine}]\n")
	require.True(t, snap.Default.Gates[0].EnforcesQuarantine())
	require.False(t, snap.Default.Gates[1].EnforcesQuarantine())
}

// TestRunAgainStartsAfresh: an Eval run a second time, under another
// snapshot whose seat policies group the bids differently, judges each bid
// under the second snapshot's policy alone, as a fresh Eval does (the
// grouping of the first run must not be read again).
func TestRunAgainStartsAfresh(t *testing.T) {
	const gates = "policy:\n  gates: [{gate: bidSanity, options: {maxPrice: 10}}]\n"
	first := snapshot(t, gates+"seats:\n  \"512\": {action: shadow}\n")
	second := snapshot(t, gates+"seats:\n  \"777\": {action: shadow}\n")
	ev := judge(t, first, engine.CheckOptions{LatencyMs: -1})
	require.False(t, ev.Out.Bids[2].Kept, "seat 777's bid over maxPrice under the default policy")

	out := ev.Run(second, engine.RunOptions{})
	fresh := &judge(t, second, engine.CheckOptions{LatencyMs: -1}).Out
	require.Len(t, out.Bids, 3)
	for i := range out.Bids {
		require.Equal(t, fresh.Bids[i].Policy.Key, out.Bids[i].Policy.Key, "bid %d", i)
		require.Equal(t, fresh.Bids[i].Kept, out.Bids[i].Kept, "bid %d", i)
		require.Equal(t, fresh.Bids[i].Rejection.Reason, out.Bids[i].Rejection.Reason, "bid %d", i)
	}
	require.True(t, out.Bids[2].Kept, "action: shadow on seat 777 removes nothing")
	require.True(t, out.Bids[2].WouldReject())
}
