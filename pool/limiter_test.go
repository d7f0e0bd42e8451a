package pool

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLimiter(t *testing.T) {
	var l Limiter
	require.True(t, l.TryAcquire(2))
	require.True(t, l.TryAcquire(2))
	require.False(t, l.TryAcquire(2), "third slot over a limit of 2")
	require.EqualValues(t, 2, l.InFlight())
	l.Release()
	require.True(t, l.TryAcquire(2))
	require.False(t, l.TryAcquire(1), "a lowered limit applies at once")
	l.Release()
	l.Release()
	require.EqualValues(t, 0, l.InFlight())
	require.True(t, l.TryAcquire(0), "0 means no limit")
	l.Release()
}

func TestLimiterConcurrent(t *testing.T) {
	var l Limiter
	const limit = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	holders, maxSeen := 0, 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if !l.TryAcquire(limit) {
					continue
				}
				mu.Lock()
				holders++
				maxSeen = max(maxSeen, holders)
				mu.Unlock()
				mu.Lock()
				holders--
				mu.Unlock()
				l.Release()
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, maxSeen, limit)
	require.EqualValues(t, 0, l.InFlight())
}

func TestBuffer(t *testing.T) {
	b := AcquireBuffer()
	b.B = append(b.B, "abc"...)
	ReleaseBuffer(b)
	b = AcquireBuffer()
	require.Empty(t, b.B)
	b.B = make([]byte, 0, 2*maxPooled)
	ReleaseBuffer(b)
}
