package gates

import (
	"math/rand/v2"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// urlCharactersBytewise is urlCharacters as it was before its eight-byte
// steps: the reference the fast one must agree with.
func urlCharactersBytewise(u string) urlWhy {
	space := false
	for i := 0; i < len(u); {
		c := u[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return whyControl
			}
			space = space || c == ' '
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(u[i:])
		if r >= 0x80 && r <= 0x9f {
			return whyControl
		}
		space = space || unicode.IsSpace(r)
		i += n
	}
	if space {
		return whySpace
	}
	return urlSafe
}

// urlCharacters answers as the byte-wise reading does, whatever byte sits
// wherever in or across its eight-byte steps.
func TestURLCharactersAgreesWithBytewise(t *testing.T) {
	// 60 bytes: sixteen-byte steps, an eight-byte one and a tail.
	base := "https://win.dsp.example/w?id=1&p=${AUCTION_PRICE}&x=abcdefgh"
	special := []string{" ", "\t", "\x00", "\x1f", "\x7f", "\x7e", "\x21", "\x20", "\u0085", "\u00a0", "\u2028", "\u3000", "é", "\xff", "\x80", "\xc2", "😀"}
	for _, sp := range special {
		for i := 0; i <= len(base); i++ {
			u := base[:i] + sp + base[i:]
			require.Equal(t, urlCharactersBytewise(u), urlCharacters(u), "%q", u)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(80))
		for j := range b {
			if rng.IntN(8) == 0 {
				b[j] = byte(rng.IntN(256))
			} else {
				b[j] = byte(0x21 + rng.IntN(0x5e))
			}
		}
		require.Equal(t, urlCharactersBytewise(string(b)), urlCharacters(string(b)), "%q", b)
	}
	for c := range 256 {
		for p := range 8 {
			w := uint64(0x4141414141414141)&^(0xff<<(8*p)) | uint64(c)<<(8*p)
			require.Equal(t, c >= 0x21 && c <= 0x7e, plainWord(w), "byte %#x at %d", c, p)
			require.Equal(t, c >= 0x21 && c <= 0x7e, plainWords(w, 0x4141414141414141), "byte %#x at %d", c, p)
			require.Equal(t, c >= 0x21 && c <= 0x7e, plainWords(0x4141414141414141, w), "byte %#x at %d", c, p)
		}
	}
}

// FuzzURLCharacters holds urlCharacters equal to the byte-wise reading.
func FuzzURLCharacters(f *testing.F) {
	for _, s := range []string{"", "https://win.dsp.example/w?id=1&p=${AUCTION_PRICE}&x=abcdefgh", "https://a b.com/\x7f", "https://é\u0085.com/\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := urlCharacters(s), urlCharactersBytewise(s); got != want {
			t.Fatalf("%q: urlCharacters %d, byte-wise %d", s, got, want)
		}
	})
}
