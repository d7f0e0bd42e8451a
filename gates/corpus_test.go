package gates

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// TestPublicSamplesUnderDefaultPolicy runs the public OpenRTB 2.5 and 2.6
// sample responses (testdata/corpus, copied from the specifications'
// examples) through the embedded default policy with --all. The samples are
// not request/response pairs (their ids differ), so each response is paired
// with the request of the matching spec example, with only its id and first
// imp id changed to the response's: win notices and the direct deal with the
// simple-banner and pmp-with-direct-deal requests, the native and VAST inline
// responses with the native-ad and video requests.
//
// Every sample is rejected, for reasons a strict exchange wants: prices 100x
// and more over the spec requests' 0.03 floor, the placeholder advertiser
// domain, a deal id the request does not offer, inline creatives without crid
// or adomain, and win notices over plain http. (The banner bids without a size
// pass creativeSize: the simple-banner imp offers exactly one size.)
// markupSafety finds the spec's illustrative markup that no renderer could
// read unreadable: the native samples hold "{ ... }" and the 2.6 VAST
// sample "<![C DATA[" and "< /TrackingEvents>".
func TestPublicSamplesUnderDefaultPolicy(t *testing.T) {
	cfg, err := config.Parse(configs.DefaultName, configs.Default)
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, configs.DefaultName, configs.Default, Builtin())
	require.NoError(t, err)
	type hit struct {
		gate, reason string
		loss, nbr    int
	}
	placeholder := hit{"rtb.adomain-verify", "placeholder adomain: advertiserdomain.com", 6, 300}
	httpNurl := hit{"rtb.url-safety", "unsafe url in nurl: scheme not https", 3, 300}
	inline := []hit{
		{"rtb.required-fields", "bid missing crid", 8, 300},
		{"rtb.bid-sanity", "bid price 3 is 100x the floor 0.03 (max 50x)", 3, 300},
		{"rtb.adomain-verify", "bid has no adomain", 6, 300},
		httpNurl,
	}
	want := map[string][]hit{
		"win-notice": {{"rtb.bid-sanity", "bid price 9.43 is 314.33x the floor 0.03 (max 50x)", 3, 300}, placeholder, httpNurl},
		"direct-deal": {{"rtb.bid-sanity", "bid price 5 is 166.67x the floor 0.03 (max 50x)", 3, 300},
			{"rtb.deal", "unknown deal id: ABC-1234-6789", 4, 300}, placeholder,
			{"rtb.url-safety", "unsafe url in nurl: space", 3, 300}}, // "http: //adserver.com"
		"native-inline": inline,
		"vast-inline":   inline,
	}
	unreadable := hit{"rtb.markup-safety", "unsafe markup: unreadable", 200, 354}
	for name, hits := range want {
		for _, v := range []string{"2.5", "2.6"} {
			t.Run(name+"-"+v, func(t *testing.T) {
				read := func(kind string) []byte {
					b, err := os.ReadFile(filepath.Join("testdata", "corpus", name+"-"+v+"-"+kind+".json"))
					require.NoError(t, err)
					return b
				}
				rep, ev, err := engine.Check(snap, read("request"), read("response"), engine.CheckOptions{LatencyMs: -1, All: true})
				require.NoError(t, err)
				defer engine.ReleaseEval(ev)
				require.False(t, rep.Passed)
				require.Equal(t, "no-bid", rep.Action)
				var got []hit
				for _, h := range rep.Rejected {
					got = append(got, hit{h.Gate, h.Reason, h.Loss, h.NBR})
				}
				want := hits
				if name == "native-inline" || name == "vast-inline" && v == "2.6" {
					want = append(append([]hit(nil), hits...), unreadable)
				}
				require.Equal(t, want, got)

				// Without --all the first failing gate of the order removes the bid.
				first, ev2, err := engine.Check(snap, read("request"), read("response"), engine.CheckOptions{LatencyMs: -1})
				require.NoError(t, err)
				defer engine.ReleaseEval(ev2)
				require.Len(t, first.Rejected, 1)
				require.Equal(t, hits[0].gate, first.Rejected[0].Gate)
			})
		}
	}
}
