//go:build !race

package quarantine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The bid path allocates nothing for a known seat: finding it (bare and
// qualified keys), observing a bid, and the gate's question.
func TestBidPathAllocs(t *testing.T) {
	set := defaultSettings()
	set.Qualified = []string{"dsp-a/s1"}
	set.Operator = []string{"dsp-b/s9"}
	s := newSim(t, set)
	s.d.Seat("", "s0")
	s.d.Seat("dsp-a", "s1")
	s.d.Tick()
	b := Bid{Price: 1.5, HasPrice: true, CRID: "cr-1", ADomain: []string{"brand.com", "other.com"}}
	allocs := testing.AllocsPerRun(1000, func() {
		s.d.Seat("dsp-x", "s0").Observe(&b)
		s.d.Seat("dsp-a", "s1").Observe(&b)
		_ = s.d.Any()
		_ = s.d.Quarantined("dsp-a", "s1")
		_ = s.d.Quarantined("dsp-b", "s9")
	})
	require.Zero(t, allocs)
}
