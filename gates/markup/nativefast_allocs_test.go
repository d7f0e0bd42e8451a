//go:build !race

package markup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNativeFastAllocs: reading native JSON jsonraw validates allocates
// nothing once the pooled buffers have grown, escaped strings and invalid
// UTF-8 included (the analysis itself is Read's).
func TestNativeFastAllocs(t *testing.T) {
	for _, adm := range []string{
		distinctNative, nativeEscaped,
		`{"native":{"link":{"url":"https://a.example/","fallback":"https:\/\/b.example\/"},"imptrackers":["https://a.example/` + "\xff" + `"],` +
			`"eventtrackers":[{"event":1,"method":1,"url":"https://c.example/"}],"assets":[{"id":1,"img":{"url":"https://d.example/i.png","w":1}}]}}`,
		`[[[{"imptrackers":["https://a.example/"]}]]]`, `"a lone string"`,
	} {
		b := []byte(adm)
		a := newAnalysis(DefaultLimits, true, true)
		allocs := testing.AllocsPerRun(100, func() {
			a.found, a.insecure = 0, false
			a.readNative(b, 0, false)
		})
		require.Zero(t, allocs, adm)
		require.Zero(t, a.found, adm)
		require.False(t, a.insecure, adm)
	}
}
