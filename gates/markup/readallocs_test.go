//go:build !race

package markup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadAllocs: reading a well-formed VAST or native creative, or a
// banner without script, under its media type allocates nothing, the
// analysis and the tokenizer included (pooled), so a distinct per-bid
// creative costs the verdict cache's miss no garbage.
func TestReadAllocs(t *testing.T) {
	for _, tc := range []struct {
		adm string
		r   Reading
	}{{distinctVAST, VAST}, {distinctNative, Native}, {distinctBanner, HTML}} {
		b := []byte(tc.adm)
		allocs := testing.AllocsPerRun(100, func() {
			f, insecure := Read(b, tc.r, DefaultLimits)
			if f != 0 || insecure {
				t.Fatalf("%s: finding %v, insecure %v", tc.adm, f, insecure)
			}
		})
		require.Zero(t, allocs, tc.adm)
	}
}
