package jsonraw

// The word-at-a-time StringEnd and ValueEnd against the byte-at-a-time
// readers they replaced, kept here as the reference: same result at every
// offset of every input, malformed ones included.

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanAgreesWithReference(t *testing.T) {
	check := func(data []byte) {
		t.Helper()
		for i := -1; i <= len(data); i++ {
			require.Equal(t, refValueEnd(data, i), ValueEnd(data, i), "ValueEnd(%q, %d)", data, i)
			if i >= 0 && i < len(data) && data[i] == '"' {
				wantEnd, wantEsc := refStringEnd(data, i)
				end, esc := StringEnd(data, i)
				require.Equal(t, wantEnd, end, "StringEnd(%q, %d)", data, i)
				require.Equal(t, wantEsc, esc, "StringEnd(%q, %d) escaped", data, i)
			}
		}
	}
	for _, name := range []string{"request", "response", "request-compact", "response-compact"} {
		check(typical(t, name))
	}
	// Short documents over the bytes that matter, and their neighbours
	// in the table and in bit 5 ('{' and '[', '}' and ']', ';' and '{'...).
	alphabet := []byte("\"\\{}[]:,;=\x1b\x1d\x02\x7b\x7d\x5b\x5d\x3b\x3d\xfb\xdb\xa2 a1\n\xff\x00\x80")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		data := make([]byte, rng.IntN(40))
		for k := range data {
			data[k] = alphabet[rng.IntN(len(alphabet))]
		}
		if len(data) > 0 && rng.IntN(2) == 0 {
			data[0] = "{[\""[rng.IntN(3)]
		}
		check(data)
	}
	// Every byte value at every place of a word, after an opener.
	for c := range 256 {
		for at := range 9 {
			data := []byte(`[aaaaaaaaaaaaaaaaa]`)
			data[1+at] = byte(c)
			check(data)
			data[0] = '"'
			check(data)
		}
	}
}

func TestQuoteOrBackslashMarksTheLowest(t *testing.T) {
	for c := range 256 {
		for at := range 8 {
			w := []byte("aaaaaaaa")
			w[at] = byte(c)
			m := quoteOrBackslash(binary.LittleEndian.Uint64(w))
			require.Equal(t, c == '"' || c == '\\', m != 0, "byte %#x", c)
			if m != 0 {
				require.Equal(t, uint64(0x80)<<(8*at), m&-m, "byte %#x at %d", c, at)
			}
		}
	}
}

// FuzzScanReference: ValueEnd and StringEnd agree with the reference at
// every offset of any input.
func FuzzScanReference(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\"",{"b":"}]"}],"c":"\\"}`, `["\`, `[[[[[[[[]]]]]]]`, `{"aaaaaaaaaaaaaa":"bbbbbbbbbbbbbbbb\"ccccc"}`,
		"[\"\xff\",{\x7b\x5d}]", `"abcdefgh\\\"ijklmnop"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i := -1; i <= len(data); i++ {
			require.Equal(t, refValueEnd(data, i), ValueEnd(data, i), "ValueEnd(%q, %d)", data, i)
			if i >= 0 && i < len(data) && data[i] == '"' {
				wantEnd, wantEsc := refStringEnd(data, i)
				end, esc := StringEnd(data, i)
				require.Equal(t, wantEnd, end, "StringEnd(%q, %d)", data, i)
				require.Equal(t, wantEsc, esc, "StringEnd(%q, %d) escaped", data, i)
			}
		}
	})
}

// refStringEnd is StringEnd as it was, a byte at a time past each word
// holding a quote or backslash.
func refStringEnd(b []byte, i int) (end int, escaped bool) {
	j := i + 1
	for {
		for j <= len(b)-8 && !refQuoteOrBackslash(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		for j < len(b) && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j >= len(b) {
			return -1, escaped
		}
		if b[j] == '"' {
			return j + 1, escaped
		}
		escaped = true
		j += 2 // the backslash and the byte it escapes
	}
}

// refQuoteOrBackslash reports whether any of the eight bytes of x is a
// quote or a backslash.
func refQuoteOrBackslash(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return ((q-lo)&^q|(b-lo)&^b)&hi != 0
}

// refValueEnd is ValueEnd as it was, a byte at a time between strings.
func refValueEnd(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := refStringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for {
			for i < len(b) && !isStructural[b[i]] {
				i++
			}
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"':
				e, _ := refStringEnd(b, i)
				if e < 0 {
					return -1
				}
				i = e
				continue
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	j := i
	for j < len(b) && !isDelim[b[j]] {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
