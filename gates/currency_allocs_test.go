//go:build !race

package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestCurrencyPassAllocatesNothing(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	g := &currency{}
	in := &ev.In
	allocs := testing.AllocsPerRun(100, func() {
		if v := g.CheckResponse(in); v.Failed() || v.Skipped() {
			panic(v.Reason)
		}
	})
	require.Zero(t, allocs)

	in.Response.Cur = "usd" // codes in any case
	allocs = testing.AllocsPerRun(100, func() {
		if v := g.CheckResponse(in); v.Failed() || v.Skipped() {
			panic(v.Reason)
		}
	})
	require.Zero(t, allocs)
}
