package gates

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func mediaImp(t *testing.T, js string) *openrtb2.Imp {
	t.Helper()
	var imp openrtb2.Imp
	require.NoError(t, json.Unmarshal([]byte(js), &imp))
	return &imp
}

func TestOfferedMedia(t *testing.T) {
	f := func(imp string, count int, only media) {
		t.Helper()
		s := offeredMedia(mediaImp(t, imp))
		require.Equal(t, count, s.count(), imp)
		require.Equal(t, only, s.only(), imp)
	}
	f(`{"id":"1"}`, 0, mediaUnknown)
	f(`{"id":"1","banner":{}}`, 1, mediaBanner)
	f(`{"id":"1","banner":null}`, 0, mediaUnknown)
	f(`{"id":"1","video":{"mimes":["video/mp4"]}}`, 1, mediaVideo)
	f(`{"id":"1","audio":{}}`, 1, mediaAudio)
	f(`{"id":"1","native":{"request":"{}"}}`, 1, mediaNative)
	f(`{"id":"1","banner":{},"video":{}}`, 2, mediaUnknown)
	f(`{"id":"1","banner":{},"video":{},"audio":{},"native":{}}`, 4, mediaUnknown)

	s := offeredMedia(mediaImp(t, `{"id":"1","banner":{},"native":{}}`))
	require.True(t, s.has(mediaBanner))
	require.True(t, s.has(mediaNative))
	require.False(t, s.has(mediaVideo))
	require.False(t, s.has(mediaUnknown))
}

func TestBidMedia(t *testing.T) {
	f := func(mtype openrtb2.MarkupType, imp string, want media) {
		t.Helper()
		require.Equal(t, want, bidMedia(&openrtb2.Bid{MType: mtype}, mediaImp(t, imp)), "mtype %d imp %s", mtype, imp)
	}
	// 2.6: mtype decides, even against the imp.
	f(1, `{"banner":{},"video":{}}`, mediaBanner)
	f(2, `{"banner":{},"video":{}}`, mediaVideo)
	f(3, `{"banner":{}}`, mediaAudio)
	f(4, `{"native":{}}`, mediaNative)
	// Unknown mtype values resolve to unknown, not to the imp's type.
	f(5, `{"banner":{}}`, mediaUnknown)
	f(-1, `{"banner":{}}`, mediaUnknown)
	// 2.5: inferred from a single-type imp.
	f(0, `{"banner":{}}`, mediaBanner)
	f(0, `{"video":{}}`, mediaVideo)
	f(0, `{"audio":{}}`, mediaAudio)
	f(0, `{"native":{}}`, mediaNative)
	f(0, `{"banner":{},"video":{}}`, mediaUnknown)
	f(0, `{}`, mediaUnknown)
}

func TestMediaBAttr(t *testing.T) {
	imp := mediaImp(t, `{"banner":{"battr":[1,2]},"video":{"battr":[3]},"audio":{},"native":{"battr":[4]}}`)
	f := func(m media, want []adcom1.CreativeAttribute, wantOK bool) {
		t.Helper()
		got, ok := mediaBAttr(imp, m)
		require.Equal(t, wantOK, ok, "media %d", m)
		require.Equal(t, want, got, "media %d", m)
	}
	f(mediaBanner, []adcom1.CreativeAttribute{1, 2}, true)
	f(mediaVideo, []adcom1.CreativeAttribute{3}, true)
	f(mediaAudio, nil, true)
	f(mediaNative, []adcom1.CreativeAttribute{4}, true)
	f(mediaUnknown, nil, false)
	_, ok := mediaBAttr(mediaImp(t, `{"banner":{}}`), mediaVideo)
	require.False(t, ok)

	require.True(t, impHasBAttr(imp))
	require.False(t, impHasBAttr(mediaImp(t, `{"banner":{"battr":[]},"video":{}}`)))
	require.True(t, impHasBAttr(mediaImp(t, `{"audio":{"battr":[9]}}`)))
}

func TestAttrBlocked(t *testing.T) {
	imp := mediaImp(t, `{"banner":{"battr":[1,2]},"video":{"battr":[3]}}`)
	f := func(m media, a adcom1.CreativeAttribute, want bool) {
		t.Helper()
		require.Equal(t, want, attrBlocked(imp, m, a), "media %d attr %d", m, a)
	}
	// The object of the bid's type decides.
	f(mediaBanner, 1, true)
	f(mediaBanner, 3, false)
	f(mediaVideo, 3, true)
	f(mediaVideo, 1, false)
	// Unknown type, or a type the imp does not carry: the union.
	f(mediaUnknown, 1, true)
	f(mediaUnknown, 3, true)
	f(mediaUnknown, 4, false)
	f(mediaAudio, 2, true)
	f(mediaNative, 5, false)
}

// mediaEval decodes a request and a response into a pooled Eval released
// when the test ends, and returns its Input.
func mediaEval(tb testing.TB, req, resp string) *engine.Input {
	tb.Helper()
	ev := engine.AcquireEval()
	tb.Cleanup(func() { engine.ReleaseEval(ev) })
	require.NoError(tb, ev.DecodeRequest([]byte(req)))
	require.NoError(tb, ev.DecodeResponse([]byte(resp), 1000))
	return &ev.In
}

// mediaJudge runs a per-bid gate over a pair as the engine does and describes
// the outcome: Prepare's skip reason, or one line per bid ("pass",
// "reject <reason> (<loss>/<nbr>)", "skip <reason> (<why>)").
func mediaJudge(tb testing.TB, g engine.BidGate, req, resp string) []string {
	tb.Helper()
	in := mediaEval(tb, req, resp)
	if skip := g.Prepare(in); skip != "" {
		return []string{"prepare skip " + skip}
	}
	var out []string
	for i := range in.Bids {
		v := g.CheckBid(in, &in.Bids[i])
		switch {
		case v.Failed():
			out = append(out, fmt.Sprintf("reject %s (%d/%d)", v.Reason, v.Loss, v.NBR))
		case v.Skipped():
			out = append(out, fmt.Sprintf("skip %s (%v)", v.Reason, v.Details))
		default:
			out = append(out, "pass")
		}
	}
	return out
}

// mediaResp wraps bid objects into a response with one seat.
func mediaResp(bids ...string) string {
	return `{"id":"r","seatbid":[{"seat":"s","bid":[` + strings.Join(bids, ",") + `]}]}`
}

// mediaReq wraps imp objects into a request.
func mediaReq(imps ...string) string {
	return `{"id":"r","imp":[` + strings.Join(imps, ",") + `]}`
}

// mediaTypical decodes the typical pair (testdata/typical-*.json).
func mediaTypical(tb testing.TB) *engine.Input {
	tb.Helper()
	req, err := os.ReadFile("testdata/typical-request.json")
	require.NoError(tb, err)
	resp, err := os.ReadFile("testdata/typical-response.json")
	require.NoError(tb, err)
	return mediaEval(tb, string(req), string(resp))
}
