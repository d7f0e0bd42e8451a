package jsonraw

// Cases of the readers gates relied on before they used this package
// (Lookup, StringLen, ValueEnd), compared with encoding/json.

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	f := func(doc, key, want string, wantOK bool) {
		t.Helper()
		got, ok := Lookup([]byte(doc), key)
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

func TestStringLen(t *testing.T) {
	f := func(v string, want int, wantOK bool) {
		t.Helper()
		n, ok := StringLen([]byte(v))
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

func TestValueEnd(t *testing.T) {
	f := func(doc string, want int) {
		t.Helper()
		require.Equal(t, want, ValueEnd([]byte(doc), 0), doc)
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

// FuzzLookup compares Lookup and StringLen with encoding/json on valid documents:
// the member found, and the code point count of string values.
func FuzzLookup(f *testing.F) {
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
		got, ok := Lookup([]byte(doc), "dsa")
		if !isObj {
			require.False(t, ok, doc)
			return
		}
		require.NoError(t, json.Unmarshal([]byte(doc), &v), doc)
		require.Equal(t, v.DSA != nil, ok, doc)
		require.Equal(t, string(v.DSA), string(got), doc)
		if n, isStr := StringLen(got); isStr {
			var s string
			require.NoError(t, json.Unmarshal(got, &s))
			require.Equal(t, utf8.RuneCountInString(s), n, doc)
		}
	})
}
