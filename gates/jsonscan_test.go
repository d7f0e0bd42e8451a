package gates

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestJSONLookup(t *testing.T) {
	f := func(doc, key, want string, wantOK bool) {
		t.Helper()
		got, ok := jsonLookup([]byte(doc), key)
		require.Equal(t, wantOK, ok, "%s[%s]", doc, key)
		require.Equal(t, want, string(got), "%s[%s]", doc, key)
	}
	f(`{"dsa":{"a":1}}`, "dsa", `{"a":1}`, true)
	f(` { "x" : [1,{"dsa":2}] , "dsa" : "v\"}" } `, "dsa", `"v\"}"`, true)
	f(`{"x":"\\","dsa":3}`, "dsa", `3`, true)
	f(`{"dsa":1,"dsa":2}`, "dsa", `2`, true)
	f(`{"DSA":1,"dsa":null}`, "dsa", `null`, true)
	f(`{"DsA":true}`, "dsa", `true`, true)
	f(`{"d\u017fa":1}`, "dsa", `1`, true)
	f("{\"d\u017fa\":1}", "dsa", `1`, true)
	f(`{"\u0064sa":-1.5e3}`, "dsa", `-1.5e3`, true)
	f(`{"dsax":1,"ds":2}`, "dsa", ``, false)
	f(`{}`, "dsa", ``, false)
	f(`[{"dsa":1}]`, "dsa", ``, false)
	f(`null`, "dsa", ``, false)
	f(``, "dsa", ``, false)
	// Malformed input stops the reader without a panic.
	f(`{"dsa"`, "dsa", ``, false)
	f(`{"dsa":`, "dsa", ``, false)
	f(`{"dsa":{"a":1}`, "dsa", `{"a":1}`, true)
	f(`{"dsa":"abc`, "dsa", ``, false)
	f(`{"a":1 "dsa":2}`, "dsa", ``, false)
	f(`{"a":1,}`, "dsa", ``, false)
}

// TestJSONKeyIsMatchesEncodingJSON compares key matching with encoding/json.
func TestJSONKeyIsMatchesEncodingJSON(t *testing.T) {
	keys := []string{`dsa`, `DSA`, `Dsa`, `d\u0073a`, `d\u017fa`, "d\u017fa", `dsa `, `ds`, `dsaa`, `\u0044SA`,
		`adrender`, `ADRENDER`, `behalf`, `\u212a`, "\u212a", `d\"a`}
	for _, k := range keys {
		var v struct {
			DSA *int `json:"dsa"`
			K   *int `json:"k"`
		}
		require.NoError(t, json.Unmarshal([]byte(`{"`+k+`":1}`), &v), k)
		require.Equal(t, v.DSA != nil, jsonKeyIs([]byte(k), "dsa"), k)
		require.Equal(t, v.K != nil, jsonKeyIs([]byte(k), "k"), k)
	}
}

func TestJSONStringLen(t *testing.T) {
	f := func(v string, want int, wantOK bool) {
		t.Helper()
		n, ok := jsonStringLen([]byte(v))
		require.Equal(t, wantOK, ok, v)
		require.Equal(t, want, n, v)
		if ok {
			var s string
			require.NoError(t, json.Unmarshal([]byte(v), &s))
			require.Equal(t, utf8.RuneCountInString(s), n, v)
		}
	}
	f(`""`, 0, true)
	f(`"abc"`, 3, true)
	f(`"é€😀"`, 3, true)
	f(`"\u00e9\n\"\\\/"`, 5, true)
	f(`"\ud83d\ude00"`, 1, true)
	f(`"\ud83d"`, 1, true)
	f(`"\ud83dx"`, 2, true)
	f(`"\ud83d\u0041"`, 2, true)
	f(`"\ude00\ud83d"`, 2, true)
	f("\"a\xffb\"", 3, true)
	f(`"`+strings.Repeat("é", 101)+`"`, 101, true)
	f(`5`, 0, false)
	f(`null`, 0, false)
	f(`"`, 0, false)
}

func TestJSONInt(t *testing.T) {
	f := func(v string, want int64, wantOK bool) {
		t.Helper()
		n, ok := jsonInt([]byte(v))
		require.Equal(t, wantOK, ok, v)
		require.Equal(t, want, n, v)
	}
	f(`2`, 2, true)
	f(`0`, 0, true)
	f(`-1`, -1, true)
	f(`2.0`, 2, true)
	f(`2e0`, 2, true)
	f(`20E-1`, 2, true)
	f(`900719925474099`, 900719925474099, true)
	f(`123456789012345678`, 0, false)
	f(`2.5`, 0, false)
	f(`1e400`, 0, false)
	f(`"2"`, 0, false)
	f(`null`, 0, false)
	f(`true`, 0, false)
	f(`-`, 0, false)
	f(``, 0, false)
}

func TestJSONValueEnd(t *testing.T) {
	f := func(doc string, want int) {
		t.Helper()
		require.Equal(t, want, jsonValueEnd([]byte(doc), 0), doc)
	}
	f(`"a\\"x`, 5)
	f(`"a\"b"`, 6)
	f(`{"a":"}"}x`, 9)
	f(`[[],{}]`, 7)
	f(`123,`, 3)
	f(`true}`, 4)
	f(`,`, -1)
	f(`[`, -1)
	f(`"\`, -1)
}

// FuzzJSONLookup compares the reader with encoding/json on valid documents:
// the member found, and the code point count of string values.
func FuzzJSONLookup(f *testing.F) {
	for _, s := range []string{`{"dsa":{"behalf":"x"}}`, `{"DSA":1,"dsa":"\u00e9\ud83d"}`, `{"a":[{"dsa":1}],"d\u017fa":"y"}`,
		`{"dsa":null}`, ` {"x" : "\\\"" , "dsa" : [ 1 , 2 ] } `, `[1]`, `"dsa"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		var v struct {
			DSA json.RawMessage `json:"dsa"`
		}
		isObj := strings.HasPrefix(strings.TrimLeft(doc, " \t\r\n"), "{")
		got, ok := jsonLookup([]byte(doc), "dsa")
		if !isObj {
			require.False(t, ok, doc)
			return
		}
		require.NoError(t, json.Unmarshal([]byte(doc), &v), doc)
		require.Equal(t, v.DSA != nil, ok, doc)
		require.Equal(t, string(v.DSA), string(got), doc)
		if n, isStr := jsonStringLen(got); isStr {
			var s string
			require.NoError(t, json.Unmarshal(got, &s))
			require.Equal(t, utf8.RuneCountInString(s), n, doc)
		}
	})
}

func TestRegsExtCOPPA(t *testing.T) {
	f := func(ext string, want bool) {
		t.Helper()
		require.Equal(t, want, regsExtCOPPA([]byte(ext)), ext)
	}
	f(`{"coppa":1}`, true)
	f(` { "a" : {"coppa":0, "x":[1,{"y":"}"}]} , "coppa" : 1 } `, true) // nested members are not top-level
	f(`{"coppa":1,"coppa":0}`, false)                                   // the last one wins
	f(`{"coppa":0,"COPPA":1}`, true)                                    // keys differing only in case too
	f(`{"s":"a,\"b\\","coppa":"1"}`, false)
	f(`{"coppa":true}`, false)
	f(`{"coppa":1.0}`, true) // numbers compare as values
	f(`{"coppa":1e0}`, true)
	f(`{"coppa":10E-1}`, true)
	f(`{"coppa":0.1e1}`, true)
	f(`{"coppa":1.5}`, false)
	f(`{"coppa":2}`, false)
	f(`{"x":{"coppa":1}}`, false)
	f(``, false)
	f(`null`, false)
}
