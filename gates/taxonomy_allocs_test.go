//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCatSetHasAllocatesNothing(t *testing.T) {
	s10, _ := newCatSet("x", taxContent10, []string{"IAB25", "IAB7-39"})
	s8, _ := newCatSet("x", taxAdProduct20, []string{"1001-1007"})
	s7, _ := newCatSet("x", taxContent30, []string{"v9i3On"})
	n := testing.AllocsPerRun(100, func() {
		_ = s10.has("iab7-39-2") || s10.has("IAB12") || s8.has("1003") || s8.has("x") || s7.has("v9i3On") || s7.has("V9I3ON")
		_ = sameCategory(taxContent30, "Rm3SiT", "rm3sit", true)
		_ = content10Covers("IAB25", "iab25-3")
		_ = s10.has("iab25-0123456789012345678901234567890123456789012345678901234567890123456789")
	})
	require.Zero(t, n)
}
