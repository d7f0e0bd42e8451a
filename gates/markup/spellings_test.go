package markup

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpellingTableIsTheMap: the table readName looks names up in answers
// as vastSpellings does, for every spelling, their case variants, and
// names near them (cut, extended, a byte changed).
func TestSpellingTableIsTheMap(t *testing.T) {
	check := func(k string) {
		t.Helper()
		want, wantOK := vastSpellings[k]
		got, ok := spellings.lookup(k)
		require.Equal(t, wantOK, ok, "%q", k)
		require.Equal(t, want, got, "%q", k)
	}
	check("")
	for k := range vastSpellings {
		for _, v := range []string{k, strings.ToUpper(k), strings.ToLower(k), k + "s", "x" + k, k[1:], k[:len(k)-1], k + k} {
			check(v)
		}
		for i := range len(k) {
			b := []byte(k)
			b[i] ^= 0x20
			check(string(b))
			b[i] ^= 0x21
			check(string(b))
		}
	}
	longest := 0
	for i := range spellingSlots {
		n := 0
		for j := i; spellings.slots[j&(spellingSlots-1)] != 0; j++ {
			n++
		}
		longest = max(longest, n)
	}
	t.Logf("%d spellings, longest probe %d", len(spellings.entries), longest)
}
