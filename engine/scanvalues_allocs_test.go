//go:build !race

package engine_test

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// TestScanValuesBuildAllocs: walking a response into storage that held it
// before allocates nothing, escaped strings included.
func TestScanValuesBuildAllocs(t *testing.T) {
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	var v engine.ScanValues
	require.Zero(t, testing.AllocsPerRun(100, func() { v.Build(&ev.In) }))
	esc := engine.AcquireEval()
	defer engine.ReleaseEval(esc)
	require.NoError(t, esc.DecodeResponse([]byte(`{"seatbid":[{"bid":[{"id":"b\u0031","adm":"it\u2019s","ext":{"a":["\ud83d\ude00"]}}]}]}`), 1000))
	require.Zero(t, testing.AllocsPerRun(100, func() { v.Build(&esc.In) }))
	require.NotEmpty(t, v.Segments())
}
