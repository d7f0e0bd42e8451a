//go:build !race

package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResponseIDPassAllocatesNothing(t *testing.T) {
	g := &responseID{}
	in := &txTypical(t).In
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if g.CheckResponse(in).Failed() {
			t.Fatal("failed")
		}
	}))
}
