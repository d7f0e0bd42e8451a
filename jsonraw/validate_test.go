package jsonraw

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	ok := func(doc string) {
		t.Helper()
		_, err := Validate([]byte(doc))
		require.NoError(t, err, doc)
		require.True(t, json.Valid([]byte(doc)), "encoding/json accepts it too: %s", doc)
	}
	bad := func(doc string, kind error, msg string) {
		t.Helper()
		_, err := Validate([]byte(doc))
		require.ErrorIs(t, err, kind, doc)
		require.Contains(t, err.Error(), msg, doc)
	}
	ok(`{}`)
	ok(` [ ] `)
	ok(`{"a":[1,-0,0.5,-1.5e3,1E+2,2e-2,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]}`)
	ok(`"` + "\xff" + `"`)
	ok(`1e-400`)
	ok(`1.7976931348623157e308`)
	ok(strings.Repeat("9", 308))
	ok(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth))
	ok(`{"s":"` + strings.Repeat("[", 2000) + `"}`)

	bad(``, ErrEmpty, "empty document")
	bad(" \n\t ", ErrEmpty, "empty document")
	bad(`{"a":1} {}`, ErrSyntax, "malformed JSON at offset 8: data after the top-level value")
	bad(`{"a":NaN}`, ErrSyntax, "malformed JSON")
	bad(`{"a":1,}`, ErrSyntax, "object key")
	bad(`[1,]`, ErrSyntax, "malformed JSON")
	bad(`{"a" 1}`, ErrSyntax, "missing ':'")
	bad(`{"a":01}`, ErrSyntax, "malformed JSON")
	bad(`{"a":1.}`, ErrSyntax, "fraction")
	bad(`{"a":1e}`, ErrSyntax, "exponent")
	bad(`{"a":-}`, ErrSyntax, "malformed JSON")
	bad(`{"a":+1}`, ErrSyntax, "malformed JSON")
	bad(`{"a":tru}`, ErrSyntax, "malformed JSON")
	bad(`{"a":"\x"}`, ErrSyntax, "invalid escape")
	bad(`{"a":"\u12g4"}`, ErrSyntax, `invalid \u escape`)
	bad("{\"a\":\"\x01\"}", ErrSyntax, "control character")
	bad(`{"a":"x`, ErrSyntax, "unexpected end")
	bad(`{"a":[1}`, ErrSyntax, "malformed JSON")
	bad(`{'a':1}`, ErrSyntax, "object key")
	bad(`{"a":1e400}`, ErrRange, "number 1e400 overflows float64 (offset 5)")
	bad(`{"ext":{"x":[-1e309]}}`, ErrRange, "overflows float64")
	bad(`1.7976931348623159e308`, ErrRange, "overflows")
	bad(strings.Repeat("9", 309), ErrRange, "overflows")
	bad(strings.Repeat("[", MaxDepth+1)+strings.Repeat("]", MaxDepth+1), ErrDepth, "nesting deeper than 1000")
	bad(strings.Repeat(`{"a":`, MaxDepth+1)+"1"+strings.Repeat("}", MaxDepth+1), ErrDepth, "nesting deeper than 1000")
}

func TestValidateUTF8(t *testing.T) {
	doc, err := Validate([]byte(`{"a":"é","b":["x"]}`))
	require.NoError(t, err)
	require.True(t, doc.ValidUTF8())
	data := []byte(`{"a":"ok","b":"` + "\xed\xa0\x80" + `"}`)
	doc, err = Validate(data)
	require.NoError(t, err)
	require.False(t, doc.ValidUTF8())
	require.True(t, doc.SpanValidUTF8(data[:10]))
	require.False(t, doc.SpanValidUTF8(data[10:]))
}

func TestValidateSurrogateEscapes(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"a":"\u00e9\u20ac","b":"\\ud800"}`: false, // an escaped backslash, then text
		`{"a":"\ud83d\ude00"}`:               true,  // a pair
		`["\uDFFF"]`:                         true,
		`{"\ud800":1}`:                       true, // in a key
		`"\ud7ff\ue000"`:                     false,
	} {
		d, err := Validate([]byte(doc))
		require.NoError(t, err, doc)
		require.Equal(t, want, d.SurrogateEscapes(), doc)
	}
}

// validOracle decides with encoding/json alone what Validate must decide:
// encoding/json's syntax, no nesting deeper than MaxDepth, no number that
// overflows float64.
func validOracle(data []byte) bool {
	if !json.Valid(data) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				if depth > MaxDepth {
					return false
				}
			} else {
				depth--
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				return false
			}
		}
	}
}

// FuzzValidate: Validate accepts exactly what encoding/json accepts, minus
// deep nesting and overflowing numbers, and says whether the document is
// valid UTF-8. The readers agree with it on every accepted document.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[]`, `1e400`, `-0.0e-0`, `"\ud800"`,
		"\"\xff\"", `{"a":1}x`, `[[[]]]`, `{"":""}`, ` true `, `{"a":"\\\""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Validate(data)
		want := validOracle(data)
		require.Equal(t, want, err == nil, "%q: %v", data, err)
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e)
			require.True(t, e.Offset >= 0 && e.Offset <= len(data), "offset %d", e.Offset)
			return
		}
		require.Equal(t, utf8.Valid(data), doc.ValidUTF8(), "%q", data)
		i := SkipSpace(data, 0)
		require.Equal(t, len(bytes.TrimRight(data, " \t\r\n")), ValueEnd(data, i), "%q", data)
		checkReaders(t, data[i:ValueEnd(data, i)])
		checkTokens(t, data)
	})
}

// checkTokens compares ValidateTokens with the tokens the readers (checked
// against encoding/json by checkReaders) find in an accepted document.
func checkTokens(t *testing.T, data []byte) {
	t.Helper()
	var toks []Token
	doc, err := ValidateTokens(data, &toks)
	require.NoError(t, err)
	want, _ := Validate(data)
	require.Equal(t, want, doc)
	var ref []Token
	i := SkipSpace(data, 0)
	refTokens(data, data[i:ValueEnd(data, i)], &ref)
	require.Equal(t, ref, toks, "%q", data)
	// A reused buffer holding other tokens gives the same tokens: every
	// field of each is written.
	used := make([]Token, len(toks)+1)
	for k := range used {
		used[k] = Token{Off: 1, End: 2, Next: 3, Kind: TokClose, Escaped: true}
	}
	used = used[:0]
	_, err = ValidateTokens(data, &used)
	require.NoError(t, err)
	require.Equal(t, toks, used, "%q into a used buffer", data)
}

func refTokens(data, v []byte, out *[]Token) {
	off := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	end := off + uint32(len(v))
	switch v[0] {
	case '{':
		at := len(*out)
		*out = append(*out, Token{Off: off, End: end, Kind: TokObject})
		m, _ := Object(v)
		for {
			key, val, more := m.Next()
			if !more {
				break
			}
			s, _ := m.Span()
			k := off + uint32(s)
			*out = append(*out, Token{Off: k, End: k + uint32(len(key)) + 2, Kind: TokKey, Escaped: bytes.IndexByte(key, '\\') >= 0})
			refTokens(data, val, out)
		}
		*out = append(*out, Token{Off: end - 1, End: end, Kind: TokClose})
		(*out)[at].Next = uint32(len(*out))
	case '[':
		at := len(*out)
		*out = append(*out, Token{Off: off, End: end, Kind: TokArray})
		a, _ := Array(v)
		for {
			val, more := a.Next()
			if !more {
				break
			}
			refTokens(data, val, out)
		}
		*out = append(*out, Token{Off: end - 1, End: end, Kind: TokClose})
		(*out)[at].Next = uint32(len(*out))
	case '"':
		*out = append(*out, Token{Off: off, End: end, Kind: TokString, Escaped: bytes.IndexByte(v, '\\') >= 0})
	default:
		*out = append(*out, Token{Off: off, End: end, Kind: TokScalar})
	}
}

// checkReaders walks v with Object/Array and compares every member and
// element with what encoding/json finds.
func checkReaders(t *testing.T, v []byte) {
	if m, ok := Object(v); ok {
		var want []json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(v))
		_, _ = dec.Token()
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err)
			keys = append(keys, k.(string))
			var raw json.RawMessage
			require.NoError(t, dec.Decode(&raw))
			want = append(want, raw)
		}
		n := 0
		for {
			key, val, more := m.Next()
			if !more {
				break
			}
			require.Less(t, n, len(want))
			require.Equal(t, keys[n], string(Unescape(nil, key)))
			require.Equal(t, string(want[n]), string(val))
			s, e := m.Span()
			require.True(t, bytes.HasPrefix(v[s:e], []byte(`"`)) && bytes.HasSuffix(v[s:e], val))
			checkReaders(t, val)
			n++
		}
		require.Equal(t, len(want), n, "%q", v)
		require.True(t, m.Complete())
		return
	}
	if a, ok := Array(v); ok {
		var want []json.RawMessage
		require.NoError(t, json.Unmarshal(v, &want))
		n := 0
		for {
			val, more := a.Next()
			if !more {
				break
			}
			require.Less(t, n, len(want))
			require.Equal(t, string(want[n]), string(val))
			checkReaders(t, val)
			n++
		}
		require.Equal(t, len(want), n, "%q", v)
	}
}

// FuzzReadersNeverPanic: the readers take any bytes without panicking.
func FuzzReadersNeverPanic(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\"",{"b":`, `["\`, `{"\u00`, `{"a"`, `[1,`, `"\ud800\u`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i := -1; i <= len(data); i++ {
			ValueEnd(data, i)
		}
		if m, ok := Object(data); ok {
			for k, _, more := m.Next(); more; k, _, more = m.Next() {
				KeyIs(k, "dsa")
				Unescape(nil, k)
			}
		}
		if a, ok := Array(data); ok {
			for _, more := a.Next(); more; _, more = a.Next() {
			}
		}
		Lookup(data, "ext")
		StringLen(data)
		Int(data)
		if len(data) > 0 {
			for i := 0; i < len(data); {
				_, i = Rune(data, i)
			}
		}
		testKeys.Match(data)
		Unescape(nil, data)
		AppendValidUTF8(nil, data)
	})
}

// TestShortcutsAgreeWithScans: where ShortString and ShortNumber take a
// string or number, scanString and scanNumber end it at the same byte
// without error, on every word over bytes that matter to them.
func TestShortcutsAgreeWithScans(t *testing.T) {
	alphabet := []byte("09518.eE-+,}] \"\\\x1f\x7f\xc3\xa9\xffa:/")
	rng := rand.New(rand.NewPCG(1, 2))
	word := make([]byte, 9)
	taken := [2]int{}
	for range 500_000 {
		for k := range word {
			word[k] = alphabet[rng.IntN(len(alphabet))]
		}
		if rng.IntN(2) == 0 { // mostly digits, mostly plain bytes
			for k := range rng.IntN(9) {
				word[k] = "0123456789"[rng.IntN(10)]
			}
		}
		if n := ShortNumber(binary.LittleEndian.Uint64(word)); n != 0 && word[0] != '0' {
			taken[0]++
			end, err := scanNumber(word, 0)
			require.Nil(t, err, "%q", word)
			require.Equal(t, end, n, "%q", word)
		} else if n == 0 && word[0] >= '1' && word[0] <= '9' {
			k := skipDigits(word, 0)
			ok := k < 7 && word[k] != '.' && word[k] != 'e' && word[k] != 'E'
			require.False(t, ok, "ShortNumber declined %q", word)
		}
		s := append([]byte{'"'}, word[:8]...)
		if n := ShortString(binary.LittleEndian.Uint64(s[1:])); n != 0 {
			taken[1]++
			end, _, err := scanString(s, 0, 0)
			require.Nil(t, err, "%q", s)
			require.Equal(t, end, n, "%q", s)
		} else if end, bad, err := scanString(s, 0, 0); err == nil && bad == 0 && end <= 9 {
			plain := true
			for _, c := range s[1 : end-1] {
				plain = plain && plainString[c]
			}
			require.False(t, plain, "ShortString declined %q", s)
		}
	}
	require.Greater(t, taken[0], 25_000)
	require.Greater(t, taken[1], 2_500)
}

// TestScanStringAndNumber: ScanString and ScanNumber take a string or a
// number exactly where Validate does, end it where its token ends, and
// report the escape and the UTF-8 validity Validate finds.
func TestScanStringAndNumber(t *testing.T) {
	alphabet := []byte("0123456789-+.eE\"\\/bu \x01\x7f\xc3\xa9\xff\xed\xa0\x80aAfF")
	rng := rand.New(rand.NewPCG(5, 6))
	taken := [2]int{}
	for range 300_000 {
		v := make([]byte, 1+rng.IntN(24))
		for k := range v {
			v[k] = alphabet[rng.IntN(len(alphabet))]
		}
		switch rng.IntN(3) {
		case 0:
			v[0] = '"'
			if len(v) > 1 && rng.IntN(2) == 0 {
				v[len(v)-1] = '"'
			}
		case 1:
			v[0] = "-123456789"[rng.IntN(10)]
		}
		if v[0] != '"' && v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			continue // neither: the callers check the byte first
		}
		data := append(append([]byte{'['}, v...), ']')
		var toks []Token
		doc, err := ValidateTokens(data, &toks)
		if v[0] == '"' {
			end, esc, utf8OK, ok := ScanString(data, 1)
			if err == nil {
				taken[0]++
				require.True(t, ok, "%q", data)
				require.Equal(t, int(toks[1].End), end, "%q", data)
				require.Equal(t, toks[1].Escaped, esc, "%q", data)
				require.Equal(t, doc.ValidUTF8(), utf8OK, "%q", data)
			} else if ok {
				require.NotEqual(t, len(data)-1, end, "took %q", data)
			}
			continue
		}
		end, ok := ScanNumber(data, 1)
		if err == nil {
			taken[1]++
			require.True(t, ok, "%q", data)
			require.Equal(t, int(toks[1].End), end, "%q", data)
		} else if ok {
			require.NotEqual(t, len(data)-1, end, "took %q", data)
		}
	}
	require.Greater(t, taken[0], 5_000)
	require.Greater(t, taken[1], 5_000)
}
