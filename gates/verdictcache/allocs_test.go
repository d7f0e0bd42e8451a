//go:build !race

package verdictcache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoAllocations(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 64)
	adm := make([]byte, 20<<10)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		adm[0], adm[1] = byte(i), byte(i>>8)
		i++
		k := h.Sum(1, adm)
		if _, ok := c.Get(k); !ok {
			c.Put(k, verdict{Reason: 1})
		}
		c.Get(k)
	})
	require.Zero(t, allocs)
}
