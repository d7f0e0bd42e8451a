package markup

import (
	"strings"
	"testing"
)

// plainShortBytewise is plainShort as it was before it read words: the
// reference of TestPlainShort and FuzzPlainShort.
func plainShortBytewise(t string, c byte) bool {
	for i := 0; i < len(t); i++ {
		if t[i] == '&' || t[i] == c {
			return false
		}
	}
	return true
}

func samePlainShort(t *testing.T, s string) {
	t.Helper()
	for _, c := range []byte{']', '<', 0, 0x80 | ']', 0x80 | '&', 0xff} {
		if got, want := plainShort(s, c), plainShortBytewise(s, c); got != want {
			t.Fatalf("plainShort(%q, %q) = %v, want %v", s, c, got, want)
		}
	}
}

// plainShortSeeds put '&', ']', '<', their bytes with the high bit set,
// NUL and 0xff at each place of texts up to 20 bytes long.
func plainShortSeeds() []string {
	var out []string
	for _, ins := range []string{"&", "]", "<", "\xa6", "\xdd", "\xbc", "\x00", "\xff", "%", "'", "\x7f"} {
		for n := range 21 {
			base := strings.Repeat("a", n)
			for k := 0; k <= n; k++ {
				out = append(out, base[:k]+ins+base[k:])
			}
		}
	}
	return out
}

func TestPlainShort(t *testing.T) {
	for _, s := range plainShortSeeds() {
		samePlainShort(t, s)
	}
}

func FuzzPlainShort(f *testing.F) {
	for _, s := range plainShortSeeds()[:60] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { samePlainShort(t, s) })
}
