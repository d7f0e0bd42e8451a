package rtb

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestProcStatBusy(t *testing.T) {
	const stat = "cpu  900 0 90 900 10 0 10 0 0 0\n" +
		"cpu0 100 1 10 500 5 1 2 3 40 0\n" +
		"cpu1 200 2 20 300 5 4 5 6 0 0\n" +
		"cpu2 300 3 30 100 0 0 0 0\n" +
		"intr 1 2 3\n" +
		"cpu3 9999 0 0 0 0 0 0 0\n"
	var set unix.CPUSet
	set.Set(1)
	set.Set(3)
	busy, total := procStatBusy([]byte(stat), &set)
	require.EqualValues(t, 200+2+20+4+5+6, busy, "user nice system irq softirq steal; idle and iowait not; cpu3 after intr not read")
	require.EqualValues(t, 200+2+20+300+5+4+5+6, total, "guest inside user: not added")
	set.Set(0)
	set.Set(2)
	busy, total = procStatBusy([]byte(stat), &set)
	require.EqualValues(t, 237+117+333, busy)
	require.EqualValues(t, 542+622+433, total, "a line with fewer fields (an old kernel) counts what it has")
	// A buffer ending inside a line: that line is not counted.
	busy, total = procStatBusy([]byte(stat[:len("cpu  900 0 90 900 10 0 10 0 0 0\ncpu0 100 1 10 500 5 1 2 3 40 0\ncpu1 200 2")]), &set)
	require.EqualValues(t, 117, busy)
	require.EqualValues(t, 622, total)
	busy, total = procStatBusy(nil, &set)
	require.Zero(t, busy+total)
}

// TestCPUSourceSeesThisProcess: spinning on every GOMAXPROCS core makes the
// share high, whether the process gets the cores (its own share) or other
// processes take them (its CPUs' share).
func TestCPUSourceSeesThisProcess(t *testing.T) {
	m := cpuMeter{src: newCPUSource()}
	start := time.Now()
	m.sample(start)
	for i := 1; i <= cpuWindow; i++ {
		var wg sync.WaitGroup
		end := start.Add(time.Duration(i) * 150 * time.Millisecond)
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for time.Now().Before(end) {
				}
			})
		}
		wg.Wait()
		m.sample(time.Now())
	}
	share, known := m.share()
	require.True(t, known)
	require.Greater(t, share, 0.5)
}
