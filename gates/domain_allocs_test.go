//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDomainPassPathAllocatesNothing(t *testing.T) {
	set := newDomainSet(defaultPlaceholders, reservedTLDs)
	list := []string{"Blocked.COM", " other.net ", "a.b.c.d.e.org"}
	allocs := testing.AllocsPerRun(100, func() {
		d, ok := normalizeDomain("  shop.brand-one.com ")
		if !ok || !isHostname(d) {
			panic("not a hostname")
		}
		if _, hit := set.match(d); hit {
			panic("placeholder")
		}
		if listCovers(list, d) {
			panic("covered")
		}
	})
	require.Zero(t, allocs)
}
