package gates

import (
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// fakeSeatStates quarantines seats by "<upstream>/<seat>" or bare key.
type fakeSeatStates map[string]string

func (f fakeSeatStates) Any() bool { return len(f) > 0 }

func (f fakeSeatStates) Quarantined(upstream, seat string) string {
	if s, ok := f[upstream+"/"+seat]; ok {
		return s
	}
	return f[seat]
}

func TestQuarantine(t *testing.T) {
	g := mustGate(t, "quarantine", "").(engine.BidGate)
	ev := typicalEval(t) // seats 512 (two bids) and 777
	defer engine.ReleaseEval(ev)
	in := &ev.In
	f := func(states engine.SeatStates, upstream string, want ...string) {
		t.Helper()
		in.Quarantine, in.Upstream = states, upstream
		if skip := g.Prepare(in); skip != "" {
			require.Equal(t, []string{skip}, want)
			return
		}
		var got []string
		for i := range in.Bids {
			v := g.CheckBid(in, &in.Bids[i])
			switch {
			case v.Failed():
				require.Equal(t, 104, v.Loss)
				require.Equal(t, 300, v.NBR)
				got = append(got, v.Reason)
			case v.Skipped():
				t.Fatalf("a bid skipped: %s", v.Reason)
			default:
				got = append(got, "")
			}
		}
		require.Equal(t, want, got)
	}
	f(nil, "", "no seat quarantined")
	f(fakeSeatStates{}, "dsp-a", "no seat quarantined")
	f(fakeSeatStates{"999": "price"}, "", "", "", "")
	f(fakeSeatStates{"512": "price"}, "", "seat quarantined: price", "seat quarantined: price", "")
	f(fakeSeatStates{"777": "operator"}, "", "", "", "seat quarantined: operator")
	f(fakeSeatStates{"dsp-a/777": "novelty"}, "dsp-a", "", "", "seat quarantined: novelty")
	f(fakeSeatStates{"dsp-a/777": "novelty"}, "dsp-b", "", "", "")
	for _, sig := range []string{"rejections", "price", "novelty", "velocity", "operator", "future"} {
		f(fakeSeatStates{"777": sig}, "", "", "", "seat quarantined: "+sig)
	}
}

// The gate is in the default policy, last, and skips there until a seat is
// quarantined.
func TestQuarantineIsLastInTheDefaultPolicy(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("{}"))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "x.yaml", []byte("{}"), Builtin())
	require.NoError(t, err)
	gs := snap.Default.Gates
	require.Equal(t, "rtb.quarantine", gs[len(gs)-1].Name)
	require.Equal(t, engine.Enforce, gs[len(gs)-1].Mode)
}

func BenchmarkQuarantine(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	ev.In.Quarantine = fakeSeatStates{"999": "price"}
	benchBidGate(b, mustGate(b, "quarantine", ""))
}
