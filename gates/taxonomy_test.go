package gates

import (
	"os"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestCatSetContent10(t *testing.T) {
	s, err := newCatSet("x", taxContent10, []string{"IAB25", "IAB7-39", " iab2 "})
	require.NoError(t, err)
	f := func(cat string, want bool) {
		t.Helper()
		require.Equal(t, want, s.has(cat), cat)
	}
	f("IAB25", true)
	f("IAB25-3", true) // a parent covers its children
	f("iab25-3", true) // codes compare ASCII-case-insensitively
	f("IAB250", false) // not on a '-' boundary
	f("IAB25x", false) // idem
	f("IAB2", true)    // configured lower-case, trimmed
	f("IAB2-1", true)  //
	f("IAB21", false)  // IAB2 does not cover IAB21
	f("IAB7-39", true) // a child listed alone
	f("IAB7-3", false) // a prefix of a listed child is not covered
	f("IAB7-390", false)
	f("IAB7", false) // a child does not cover its parent
	f("IAB7-39-1", true)
	f("", false)
	f("-", false)
	f("IAB25-", true)
	long := make([]byte, 100)
	for i := range long {
		long[i] = 'a'
	}
	f(string(long), false)
	f("IAB25-"+string(long), true)
	s2, err := newCatSet("x", taxContent10, []string{string(long[:64])})
	require.NoError(t, err)
	require.True(t, s2.has(string(long[:64])))
	require.True(t, s2.has(string(long[:64])+"-1"))
	require.False(t, s2.has(string(long[:65])))
	require.False(t, s2.has(string(long[:63])))
	_, err = newCatSet("childCategories", taxContent10, []string{string(long[:65])})
	require.EqualError(t, err, "childCategories[0] is longer than 64 bytes")
}

func TestCatSetAdProduct20(t *testing.T) {
	s, err := newCatSet("x", taxAdProduct20, []string{"1001", "1002-1007", "1049-1057", "1005-1010", "7"})
	require.NoError(t, err)
	require.Equal(t, []idRange{{7, 7}, {1001, 1010}, {1049, 1057}}, s.ranges)
	f := func(cat string, want bool) {
		t.Helper()
		require.Equal(t, want, s.has(cat), cat)
	}
	f("1001", true)
	f("1002", true)
	f("1007", true)
	f("1010", true)
	f("1011", false)
	f("1048", false)
	f("1049", true)
	f("1057", true)
	f("1058", false)
	f("7", true)
	f("6", false)
	f("01001", false) // not a canonical ID
	f("+1001", false)
	f("1001.0", false)
	f("1002-1007", false) // a range is config syntax, not an ID
	f("", false)
	f("9999999999", false)

	for _, bad := range []string{"x", "10-5", "-5", "5-", "010", "1-2-3", ""} {
		_, err := newCatSet("unsafeCategories[8]", taxAdProduct20, []string{bad})
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "unsafeCategories[8][0]")
	}
}

func TestCatSetExactIDs(t *testing.T) {
	s, err := newCatSet("x", taxContent30, []string{"v9i3On", "150", " Abc "})
	require.NoError(t, err)
	require.True(t, s.has("v9i3On"))
	require.True(t, s.has("V9I3ON"), "a block list errs on the side of blocking: any case")
	require.True(t, s.has("abc"))
	require.False(t, s.has("v9i3On "))
	require.True(t, s.has("150"))
	require.False(t, s.has("150-1")) // no code structure
	require.False(t, s.has("15"))
	var nilSet *catSet
	require.False(t, nilSet.has("150"))

	long := strings.Repeat("x", 65)
	_, err = newCatSet("unsafeCategories[7]", taxContent30, []string{long})
	require.EqualError(t, err, "unsafeCategories[7][0] is longer than 64 bytes")
	s, err = newCatSet("x", taxContent30, []string{long[:64]})
	require.NoError(t, err)
	require.True(t, s.has(strings.ToUpper(long[:64])))
	require.False(t, s.has(long))
}

func TestContent10Covers(t *testing.T) {
	f := func(code, cat string, want bool) {
		t.Helper()
		require.Equal(t, want, content10Covers(code, cat), "%s covers %s", code, cat)
	}
	f("IAB25", "IAB25", true)
	f("IAB25", "IAB25-3", true)
	f("IAB25", "iab25-3", true)
	f("iab25", "IAB25-3", true)
	f("IAB25", "IAB250", false)
	f("IAB2", "IAB25", false)
	f("IAB25-3", "IAB25", false)
	f("", "IAB25", false)
	f("IAB25", "", false)

	g := func(tax int64, code, cat string, hier, want bool) {
		t.Helper()
		require.Equal(t, want, sameCategory(tax, code, cat, hier), "%d %s %s %v", tax, code, cat, hier)
	}
	g(1, "IAB25", "IAB25-3", true, true)
	g(1, "IAB25", "IAB25-3", false, false)
	g(1, "IAB25", "iab25", false, true)
	g(7, "abc", "abc", true, true)
	g(7, "abc", "ABC", true, true)
	g(7, "abc", "ABC", false, true)
	g(8, "1001", "1001", true, true)
	g(7, "abc", "abc-1", true, false)
	g(7, "", "", true, false)
}

func TestCompileTaxonomySets(t *testing.T) {
	sets, err := compileTaxonomySets("unsafeCategories", map[string][]string{"1": {"IAB25"}, "8": {"1001"}, "500": {}})
	require.NoError(t, err)
	require.Len(t, sets, 3)
	require.True(t, sets[1].has("IAB25-1"))
	require.True(t, sets[8].has("1001"))
	require.False(t, sets[500].has("x"))

	_, err = compileTaxonomySets("unsafeCategories", map[string][]string{"x": {"a"}, "0": {"a"}, "8": {"y"}, "1": {""}})
	require.EqualError(t, err, `unsafeCategories: taxonomy "0" must be a positive number
unsafeCategories[1][0] is empty
unsafeCategories[8][0]: "y" is not an Ad Product 2.0 id (a number, or a range lo-hi)
unsafeCategories: taxonomy "x" must be a positive number`)

	_, err = compileTaxonomySets("unsafeCategories", map[string][]string{"8": {"1"}, "08": {"2"}})
	require.EqualError(t, err, `unsafeCategories: taxonomy "08" and "8" are both 8`)
}

func TestCatTaxOfAndHasCategory(t *testing.T) {
	require.EqualValues(t, 1, catTaxOf(0))
	require.EqualValues(t, 7, catTaxOf(7))
	require.False(t, hasCategory(nil))
	require.False(t, hasCategory([]string{"", ""}))
	require.True(t, hasCategory([]string{"", "IAB1"}))
}

// txEval decodes a request and a response as the engine does; the Eval is
// released when the test ends.
func txEval(tb testing.TB, req, resp string) *engine.Eval {
	tb.Helper()
	ev := engine.AcquireEval()
	tb.Cleanup(func() { engine.ReleaseEval(ev) })
	require.NoError(tb, ev.DecodeRequest([]byte(req)))
	require.NoError(tb, ev.DecodeResponse([]byte(resp), 1000))
	return ev
}

// txTypical decodes the typical pair (testdata/typical-*.json).
func txTypical(tb testing.TB) *engine.Eval {
	tb.Helper()
	req, err := os.ReadFile("testdata/typical-request.json")
	require.NoError(tb, err)
	resp, err := os.ReadFile("testdata/typical-response.json")
	require.NoError(tb, err)
	return txEval(tb, string(req), string(resp))
}

// txBid judges one bid with a per-bid gate as the engine does: Prepare, then
// CheckBid. It returns the skip reason, or the verdict.
func txBid(tb testing.TB, g engine.BidGate, req, bid string) (string, engine.Verdict) {
	tb.Helper()
	ev := txEval(tb, req, `{"id":"r","seatbid":[{"seat":"s","bid":[`+bid+`]}]}`)
	if skip := g.Prepare(&ev.In); skip != "" {
		return skip, engine.Verdict{}
	}
	return "", g.CheckBid(&ev.In, &ev.In.Bids[0])
}
