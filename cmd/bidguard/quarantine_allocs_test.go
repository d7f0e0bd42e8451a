//go:build !race

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
)

// TestJudgedAllocs: feeding the detector a judged response (rejected and
// warned bids, three seats) allocates nothing once its seats are known.
func TestJudgedAllocs(t *testing.T) {
	q, snap, ev := judgedFixture(t)
	defer engine.ReleaseEval(ev)
	require.Zero(t, testing.AllocsPerRun(1000, func() { q.judged("dsp", snap, ev, &ev.Out) }))
}
