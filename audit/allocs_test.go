//go:build !race

package audit

import (
	"strings"
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

// TestRingReusesSmallBuffers: a released slot keeps a buffer of up to
// keepBuf bytes, so the next record of that size fills it without
// allocating, and drops a larger one, so a full ring retains bounded memory.
func TestRingReusesSmallBuffers(t *testing.T) {
	q := newRing(1)
	small := reject(1)
	require.True(t, q.push(small, 0))
	q.release(1)
	require.Positive(t, cap(q.cells[0].s.buf), "a small record's buffer is kept")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		q.push(small, 0)
		q.release(1)
	}))

	big := reject(2)
	big.Reason = strings.Repeat("r", MaxReason)
	require.True(t, q.push(big, 0))
	require.Greater(t, cap(q.cells[0].s.buf), keepBuf)
	q.release(1)
	require.Zero(t, cap(q.cells[0].s.buf), "a buffer larger than keepBuf is dropped")
}
