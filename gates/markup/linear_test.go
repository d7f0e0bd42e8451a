//go:build !race

package markup

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLinear bounds the work of reading by its allocations (a count that,
// unlike time, does not depend on the machine): from 32 KiB to 128 KiB of
// adversarial input they may grow at most 4x, give or take half, and a
// realistic script-heavy creative allocates in proportion to its size.
func TestLinear(t *testing.T) {
	allocs := func(adm []byte, r Reading) float64 {
		return testing.AllocsPerRun(2, func() { Read(adm, r, DefaultLimits) })
	}
	for _, p := range []struct {
		unit string
		r    Reading
	}{
		{"<", HTML}, {"<a ", HTML}, {"<!--", HTML}, {"<script>", HTML}, {"<svg><style>", HTML}, {"<p>", HTML},
		{"<script>a[", HTML}, {"<script>'", HTML}, {"<script>x+", HTML}, {`<a onclick="x[`, HTML},
		{`<iframe srcdoc="&lt;iframe srcdoc=&quot;`, HTML}, {"<script>document.write('<p>'+", HTML},
		{"<script>var a='x';", HTML}, {"<script>a.b.c=d;", HTML}, {"<div style=\"background:url(x)\">", HTML},
		{"<VAST><Ad><Impression>x</Impression></Ad>", VAST}, {"<Impression>&amp;", VAST},
		{`{"imptrackers":["a",`, Native}, {`[[[[`, Native},
	} {
		small := []byte(strings.Repeat(p.unit, (32<<10)/len(p.unit)))
		large := []byte(strings.Repeat(p.unit, (128<<10)/len(p.unit)))
		s, l := allocs(small, p.r), allocs(large, p.r)
		require.LessOrEqual(t, l, 6*s+64, "%q: %v allocs at 32 KiB, %v at 128 KiB", p.unit, s, l)
	}
	s, l := allocs(scriptHeavy(20<<10), HTML), allocs(scriptHeavy(80<<10), HTML)
	require.InDelta(t, 4, l/s, 0.5, "script-heavy creative: %v allocs at 20 KB, %v at 80 KB", s, l)
}
