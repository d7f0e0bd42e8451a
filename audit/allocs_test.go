//go:build !race

package audit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnqueueAllocs: handing a record to the writer allocates nothing once
// the queue's slots are warm, whether it is queued or dropped.
func TestEnqueueAllocs(t *testing.T) {
	const queue = 64
	var m testMeters
	l := openLog(t, Options{Path: logPath(t), Queue: queue, Meters: m.meters()})
	defer l.Close()
	r := reject(1)
	for range queue {
		require.True(t, l.Enqueue(r))
	}
	waitFor(t, func() bool { return m.written.get() == queue+1 }, "the writer drains the queue")
	require.Zero(t, testing.AllocsPerRun(1000, func() { l.Enqueue(r) }))
}
