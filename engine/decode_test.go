package engine

import (
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func decodeResp(t *testing.T, doc string) ([]Bid, ResponseInfo, error) {
	t.Helper()
	var r openrtb2.BidResponse
	return DecodeResponse([]byte(doc), 1000, &r, nil)
}

func TestDecodeResponseErrors(t *testing.T) {
	f := func(doc, msg string) {
		t.Helper()
		_, _, err := decodeResp(t, doc)
		require.Error(t, err, doc)
		require.Contains(t, err.Error(), msg, doc)
	}
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","price":"1.5"}]}]}`, "price")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":7,"price":1}]}]}`, "impid")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","price":1e400}]}]}`, "price")
	f(`{"id":"1","seatbid":[{"bid":[{"id":"b","impid":"1","price":NaN}]}]}`, "malformed JSON")
	f(`{"id":"1","seatbid":[]} {}`, "malformed JSON")
	f(`{"id":"1","imp":[{"id":"1"}]}`, "looks like a bid request")
	f(strings.Repeat("[", 1001)+strings.Repeat("]", 1001), "nesting deeper than 1000")
	f(``, "empty document")
	f(`{"id":"1","seatbid":[{"bid":[null]}]}`, "is null")
	f(`[]`, "wrong JSON type")
}

func TestDecodeResponseRecords(t *testing.T) {
	bids, info, err := decodeResp(t, `{"id":"1","seatbid":[{"seat":"s","bid":[
		{"id":"a","impid":"1"},
		{"id":"b","impid":"1","price":null},
		{"id":"c","impid":"1","price":0},
		{"id":"d","impid":"1","price":2,"PRICE":3,"adm":"`+"\xff"+`"},
		{"id":"e","impid":"1","price":1,"price":4}]}]}`)
	require.NoError(t, err)
	require.Equal(t, 5, info.BidCount)
	require.Len(t, bids, 5)
	has := []bool{false, false, true, true, true}
	for i, b := range bids {
		require.Equal(t, has[i], b.HasPrice, b.ID)
		require.Equal(t, "s", b.Seat)
		require.Equal(t, i == 3, b.BadUTF8, b.ID)
	}
	require.Equal(t, 3.0, bids[3].Price, "case-variant keys: the last one wins")
	require.Equal(t, 4.0, bids[4].Price, "duplicate keys: the last one wins")
}

func TestDecodeResponseEmptyAndLimits(t *testing.T) {
	_, info, err := decodeResp(t, `null`)
	require.NoError(t, err)
	require.True(t, info.Empty)
	_, info, err = decodeResp(t, ` { } `)
	require.NoError(t, err)
	require.True(t, info.Empty)
	_, info, err = decodeResp(t, `{"id":"x"}`)
	require.NoError(t, err)
	require.False(t, info.Empty)
	// Depth exactly 1000 is accepted.
	deep := `{"id":"1","ext":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}`
	_, _, err = decodeResp(t, deep)
	require.NoError(t, err)
	// Brackets inside strings do not count.
	_, _, err = decodeResp(t, `{"id":"`+strings.Repeat("[", 2000)+`"}`)
	require.NoError(t, err)

	var r openrtb2.BidResponse
	_, info, err = DecodeResponse([]byte(`{"id":"1","seatbid":[{"bid":[{"id":"a"},{"id":"b"},{"id":"c"}]}]}`), 2, &r, nil)
	require.NoError(t, err)
	require.True(t, info.TooManyBids)
	require.Equal(t, 3, info.BidCount)
}

func TestDecodeRequestStrictTypes(t *testing.T) {
	f := func(doc string, ok bool) {
		t.Helper()
		var r openrtb2.BidRequest
		err := DecodeRequest([]byte(doc), &r)
		if ok {
			require.NoError(t, err, doc)
		} else {
			require.Error(t, err, doc)
		}
	}
	f(`{"id":"1","imp":[{"id":"1"}],"tmax":100}`, true)
	f(`{"id":"1","imp":[{"id":"1"}],"tmax":"100"}`, false)
	f(`{"id":"1","imp":[{"id":"1"}],"regs":{"coppa":true}}`, false)
	f(`{"id":"1","imp":[{"id":"1"}],"unknown":{"x":[1,2]},"at":99}`, true)
	f(`{"id":"1","imp":[{"id":"1","banner":{"pos":42}}]}`, true)
	f(`{"id":"1"`, false)
}
