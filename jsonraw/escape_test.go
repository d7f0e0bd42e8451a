package jsonraw

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestUnescape(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		require.Equal(t, want, string(Unescape([]byte("p:"), []byte(raw)))[2:], raw)
		require.Equal(t, raw != want, NeedsUnescape([]byte(raw)), raw)
		if utf8.ValidString(raw) {
			require.Equal(t, want, string(UnescapeValid([]byte("p:"), []byte(raw)))[2:], raw)
		}
	}
	f(`plain`, "plain")
	f(`a\"b\\c\/d\b\f\n\r\t`, "a\"b\\c/d\b\f\n\r\t")
	f(`\u00e9\u20AC`, "é€")
	f(`\ud83d\ude00`, "😀")
	f(`\ud83d`, "\uFFFD")
	f(`\ude00\ud83d`, "\uFFFD\uFFFD")
	f(`\ud83dx`, "\uFFFDx")
	f(`\ud83d\u0041`, "\uFFFDA")
	f("a\xffb", "a\uFFFDb")
	f("\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD")
	f("é", "é")
	// Malformed escapes (which Validate rejects) decode as Unescape
	// decodes them, even where that is longer than the input.
	for _, raw := range []string{`\`, `a\`, `\u12`, `\uZZZZ`, `\q`, `\u\u\u\u`, `abcdefgh\uZZ\uZZ\uZZ\uZZ\uZZ\uZZ`} {
		want := string(Unescape(nil, []byte(raw)))
		require.Equal(t, want, string(UnescapeValid(nil, []byte(raw))), raw)
		require.Equal(t, want, string(UnescapeValid(make([]byte, 0, len(raw)), []byte(raw))), raw)
	}
	n, ok := StringLen([]byte(`"a\u00e9😀` + "\xff" + `"`))
	require.True(t, ok)
	require.Equal(t, 4, n)
	_, ok = StringLen([]byte(`1`))
	require.False(t, ok)
}

// FuzzUnescape: Unescape decodes every valid JSON string to what
// encoding/json decodes it to.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`a\u00e9`, `\ud83d\ude00`, `\ud83d`, "\xff\xfe", `\\\"`, `\udc00\ud800\udc00`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		quoted := append(append([]byte(`"`), raw...), '"')
		if _, err := Validate(quoted); err != nil {
			return
		}
		var want string
		require.NoError(t, json.Unmarshal(quoted, &want))
		got := Unescape(nil, raw)
		require.Equal(t, want, string(got), "%q", raw)
		if utf8.Valid(raw) {
			require.Equal(t, want, string(UnescapeValid(nil, raw)), "UnescapeValid(%q)", raw)
			// Into a buffer of exactly the room the engine's decoder
			// gives it, after a prefix: nothing written outside it.
			buf := make([]byte, 3+len(raw)+8)
			copy(buf, "p:/")
			for i := 3 + len(raw); i < len(buf); i++ {
				buf[i] = '#'
			}
			got := UnescapeValid(buf[2:2:3+len(raw)], raw)
			require.Equal(t, want, string(got), "UnescapeValid(%q) into a full buffer", raw)
			require.Equal(t, "p:", string(buf[:2]))
			require.Equal(t, strings.Repeat("#", 8), string(buf[3+len(raw):]))
		}
		require.Equal(t, want != string(raw), NeedsUnescape(raw), "%q", raw)
		n, ok := StringLen(quoted)
		require.True(t, ok)
		require.Equal(t, utf8.RuneCountInString(want), n)
	})
}

func stdString(t *testing.T, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(s))
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// FuzzAppendString: AppendString writes what encoding/json writes with
// SetEscapeHTML(false), for strings and byte slices.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"<a href=\"x\">&</a>", "\u2028\u2029", "\x00\x1f\x7f", "\xff\xc3", "é😀", "\b\f\n\r\t\\\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := stdString(t, s)
		require.Equal(t, want, string(AppendString(nil, s)), "%q", s)
		require.Equal(t, want, string(AppendString(nil, []byte(s))), "%q", s)
	})
}

// FuzzAppendValidUTF8: the result is valid UTF-8 and the same JSON value.
func FuzzAppendValidUTF8(f *testing.F) {
	f.Add([]byte(`{"a":"` + "\xff" + `x","b":[1,"` + "\xed\xa0\x80" + `"]}`))
	f.Add([]byte(`{"a":"é"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Validate(data); err != nil {
			return
		}
		out := AppendValidUTF8(nil, data)
		require.True(t, utf8.Valid(out))
		if utf8.Valid(data) {
			require.Equal(t, data, out)
		}
		var a, b any
		require.NoError(t, json.Unmarshal(data, &a))
		require.NoError(t, json.Unmarshal(out, &b))
		require.Equal(t, a, b)
	})
}

// FuzzAppendFloat: AppendFloat writes what encoding/json writes.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, -0.0, 1, 1.25, 1e21, 1e20, 1e-6, 1e-7, 123456789e-15, -2.5e-9, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return
		}
		want, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendFloat(nil, v)))
	})
}

func TestInt(t *testing.T) {
	f := func(v string, want int64, ok bool) {
		t.Helper()
		n, got := Int([]byte(v))
		require.Equal(t, ok, got, v)
		require.Equal(t, want, n, v)
	}
	f(`2`, 2, true)
	f(`-1`, -1, true)
	f(`2.0`, 2, true)
	f(`2e0`, 2, true)
	f(`20e-1`, 2, true)
	f(`-0`, 0, true)
	f(`2.5`, 0, false)
	f(`1e16`, 0, false)
	f(`1e300`, 0, false)
	f(`"2"`, 0, false)
	f(`0x10`, 0, false)
	f(`-Inf`, 0, false)
	f(``, 0, false)
}
