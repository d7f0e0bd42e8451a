//go:build unix

package audit

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// processCPU is the CPU time (user and system) the process has used.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// An idle writer sleeps: with nothing to write, nothing to fsync and no
// head to log, it waits for a signal and uses no CPU. (A writer that
// re-armed its timer at 0 or 1 ns would spin a core; the bound, a quarter
// of the idle time, is far above an idle process's few milliseconds.)
func TestLogIdleWriterSleeps(t *testing.T) {
	l := openLog(t, Options{Path: logPath(t)})
	defer l.Close()
	time.Sleep(2 * syncAfter) // past the fsync delay of Open's records
	before := processCPU(t)
	const idle = 400 * time.Millisecond
	time.Sleep(idle)
	require.Less(t, processCPU(t)-before, idle/4, "CPU used while the writer was idle")
}
