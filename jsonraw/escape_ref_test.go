package jsonraw

// UnescapeValid as it was before its word loop tested one bound and read
// and wrote its words unchecked: the reference it is held to
// (TestUnescapeValidAgreesWithBefore, FuzzUnescapeValidAgreesWithBefore).

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// refUnescapeValid is UnescapeValid as it was: Unescape for s known to be valid UTF-8 (jsonraw.Doc's
// ValidUTF8): the runs between escapes are copied unchecked, eight bytes at
// a time (each word stored whole, then looked at for a backslash), with no
// call but for an escape.
func refUnescapeValid(dst, s []byte) []byte {
	// Never longer than s but for a malformed escape (below).
	out := slices.Grow(dst, len(s))
	n, out := len(out), out[:cap(out)]
	for i := 0; ; {
		for i <= len(s)-8 && n <= len(out)-8 {
			x := binary.LittleEndian.Uint64(s[i:])
			binary.LittleEndian.PutUint64(out[n:], x)
			m := backslashBytes(x)
			if m == 0 {
				i, n = i+8, n+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			i, n = i+k, n+k
			// The usual escapes, of a quote, a slash or a backslash,
			// without leaving the loop.
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '/' || s[i+1] == '\\') {
				out[n] = s[i+1]
				i, n = i+2, n+1
				continue
			}
			break
		}
		for i < len(s) && s[i] != '\\' && n < len(out) {
			out[n] = s[i]
			i, n = i+1, n+1
		}
		if i >= len(s) {
			return out[:n]
		}
		if s[i] != '\\' {
			// A run that did not fit, after a malformed escape.
			out = append(out[:n], s[i])
			i, n, out = i+1, n+1, out[:cap(out)]
			continue
		}
		var r rune
		r, i = Rune(s, i)
		if w := utf8.RuneLen(r); len(out)-n < w {
			// Only a malformed escape (one U+FFFD for fewer
			// bytes) grows the result beyond len(s).
			out = slices.Grow(out[:n], w+len(s)-i)
			out = out[:cap(out)]
		}
		if r < utf8.RuneSelf {
			out[n] = byte(r)
			n++
		} else {
			n += utf8.EncodeRune(out[n:], r)
		}
	}
}

// checkUnescapeValidAgrees compares UnescapeValid with the reference on s,
// into buffers of several shapes: nil, after a prefix with no room, with
// exactly the room the engine's decoder gives, with ample room. The
// results agree, and neither writes outside the room.
func checkUnescapeValidAgrees(t *testing.T, s []byte) {
	t.Helper()
	require.Equal(t, refUnescapeValid(nil, s), UnescapeValid(nil, s), "%q", s)
	for _, room := range []int{0, 1, 7, len(s), len(s) + 1, 2*len(s) + 16} {
		buf := func() []byte {
			b := make([]byte, 3+room+8)
			for k := range b {
				b[k] = '#'
			}
			copy(b, "p:/")
			return b
		}
		want, got := buf(), buf()
		w := refUnescapeValid(want[2:2:3+room], s)
		g := UnescapeValid(got[2:2:3+room], s)
		require.Equal(t, w, g, "%q, room %d", s, room)
		// Outside the room nothing is written; the bytes of the room past
		// the result are scratch (either may have stored a word there).
		require.Equal(t, "p:", string(got[:2]), "%q, room %d: before the room", s, room)
		require.Equal(t, want[3+room:], got[3+room:], "%q, room %d: after the room", s, room)
	}
}

// TestUnescapeValidAgreesWithBefore: UnescapeValid gives what it gave
// before on the typical response's strings and on escapes at every offset
// of runs around a word long.
func TestUnescapeValidAgreesWithBefore(t *testing.T) {
	data := typical(t, "response")
	var toks []Token
	_, err := ValidateTokens(data, &toks)
	require.NoError(t, err)
	for _, tk := range toks {
		if tk.Kind == TokString || tk.Kind == TokKey {
			checkUnescapeValidAgrees(t, data[tk.Off+1:tk.End-1])
		}
	}
	for _, esc := range []string{`\"`, `\\`, `\/`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\u12`, `\`, `\q`, "\xff", "é"} {
		for before := range 20 {
			for after := range 12 {
				s := strings.Repeat("a", before) + esc + strings.Repeat("b", after) + esc
				checkUnescapeValidAgrees(t, []byte(s))
			}
		}
	}
}

// FuzzUnescapeValidAgreesWithBefore: on any bytes, UnescapeValid gives
// what it gave before, into every shape of buffer.
func FuzzUnescapeValidAgreesWithBefore(f *testing.F) {
	for _, s := range []string{`a\u00e9`, `\ud83d\ude00`, `\ud83d`, "\xff\xfe", `\\\"`, `<div class=\"ad\"><a href=\"https://x\">`,
		`abcdefgh\uZZ\uZZ\uZZ\uZZ\uZZ\uZZ`, `\u\u\u\u`, `abcdefghijklmnop\"qrstuvwxyz0123456789\/`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		checkUnescapeValidAgrees(t, s)
	})
}
