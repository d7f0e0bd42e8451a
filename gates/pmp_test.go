package gates

import (
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestFindDeal(t *testing.T) {
	pmp := &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "d1", BidFloor: 1}, {ID: "d2"}, {ID: "d1", BidFloor: 2}}}
	require.Nil(t, findDeal(nil, "d1"))
	require.Nil(t, findDeal(pmp, ""))
	require.Nil(t, findDeal(pmp, "D1"))
	require.Nil(t, findDeal(pmp, "d3"))
	require.Equal(t, "d2", findDeal(pmp, "d2").ID)
	require.Equal(t, 1.0, findDeal(pmp, "d1").BidFloor, "the first deal with the id")
	require.Nil(t, impPMP(nil))
	require.Same(t, pmp, impPMP(&openrtb2.Imp{PMP: pmp}))
}
