package rtb

import (
	"os"
	"path/filepath"
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

func TestCgroupQuota(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(content), 0o644))
	}
	// cgroup v2: the tightest of the leaf and its ancestors, read afresh at
	// every call (a limit resized in place is followed).
	write("kubepods/pod1/ctr/cpu.max", "max 100000\n")
	write("kubepods/pod1/cpu.max", "150000 100000\n")
	write("kubepods/cpu.max", "400000 100000\n")
	q := openCgroupQuota([]byte("0::/kubepods/pod1/ctr\n"), root)
	require.Len(t, q.levels, 3)
	require.InDelta(t, 1.5, q.cores(), 1e-9)
	write("kubepods/pod1/ctr/cpu.max", "50000 100000\n")
	require.InDelta(t, 0.5, q.cores(), 1e-9)
	// No limit anywhere, or none readable: 0.
	require.Zero(t, openCgroupQuota([]byte("0::/elsewhere\n"), root).cores())
	require.Zero(t, openCgroupQuota(nil, root).cores())
	write("bad/cpu.max", "lots 100000\n")
	require.Zero(t, openCgroupQuota([]byte("0::/bad\n"), root).cores())
	// cgroup v1: the cpu controller's quota and period, under its mount
	// named by its controllers or as "cpu"; -1 is no limit.
	write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n")
	write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
	write("cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n")
	write("cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n")
	self := "12:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n"
	require.InDelta(t, 2, openCgroupQuota([]byte(self), root).cores(), 1e-9)
	write("cpu/x/cpu.cfs_quota_us", "25000\n")
	write("cpu/x/cpu.cfs_period_us", "100000\n")
	require.InDelta(t, 0.25, openCgroupQuota([]byte("2:cpu:/x\n"), root).cores(), 1e-9)
}

// TestCPUShareUnderALimit: a process using all of a one-core limit is busy,
// whatever its GOMAXPROCS (Go's default under a limit is at least 2).
func TestCPUShareUnderALimit(t *testing.T) {
	at := time.Unix(1000, 0)
	a := cpuSample{wall: at, cores: 1}
	b := cpuSample{wall: at.Add(time.Second), proc: time.Second, cores: 1}
	share, ok := busyShare(a, b)
	require.True(t, ok)
	require.InDelta(t, 1, share, 1e-9)
	a.cores, b.cores = 2, 2 // the same use read against GOMAXPROCS 2
	share, _ = busyShare(a, b)
	require.InDelta(t, 0.5, share, 1e-9)
}
