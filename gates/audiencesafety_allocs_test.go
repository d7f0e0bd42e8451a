//go:build !race

package gates

import (
	"encoding/json"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestAudienceSafetyPassAllocatesNothing(t *testing.T) {
	g := newAudienceSafetyForTest(t, func(o *audienceSafetyOptions) { o.ChildCategories = []string{"IAB9-7"} })
	in := audienceSafetyInput(t)
	run := func() {
		if g.Prepare(in) != "" {
			t.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				t.Fatal(v.Reason)
			}
		}
	}
	require.Zero(t, testing.AllocsPerRun(100, run))

	// Each child-directed signal, and inventory that is not child-directed.
	in.Request.Regs = &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":0,"coppa":1}`)}
	require.Zero(t, testing.AllocsPerRun(100, run))
	in.Request.Regs = nil
	in.Request.Site.Cat = []string{"IAB1", "iab9-7-2"}
	require.Zero(t, testing.AllocsPerRun(100, run))
	in.Request.Site = nil
	in.Request.App = &openrtb2.App{Bundle: "com.acme.BabyShark"}
	require.Zero(t, testing.AllocsPerRun(100, run))
	in.Request.App = &openrtb2.App{Bundle: "com.acme.news", Cat: []string{"IAB12"}}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if g.Prepare(in) == "" {
			t.Fatal("not skipped")
		}
	}))
}
