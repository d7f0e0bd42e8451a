package rtb

import (
	"runtime"
	"time"
)

// cpuMeter tells the governor how busy the CPUs bidguard can run on were
// over the last cpuWindow intervals between samples: the higher of two
// shares,
//
//   - the process's own CPU time over the cores it may use: GOMAXPROCS, or
//     its cgroup's CPU limit when lower (at the limit this is 1, whatever
//     the node does),
//   - the busy time (steal included: a CPU the hypervisor gave away is not
//     one bidguard can use) of the CPUs in the process's affinity mask, from
//     /proc/stat on Linux (a machine shared with other processes: bidguard
//     can be starved without using its GOMAXPROCS).
//
// The governor cuts only while this share is high: a queue of requests inside
// bidguard while its CPUs have room is a burst (the exchange's client falling
// behind and catching up, a slow bidder's answers arriving in waves), not an
// overload that shedding would relieve. Used by the governor's goroutine only.
type cpuMeter struct {
	src  cpuSource
	ring [cpuWindow + 1]cpuSample // the last samples, a ring
	n    int                      // samples taken
}

// cpuSample is one reading of the process's CPU time and of its CPUs' busy
// and total time (clock ticks of /proc/stat; both 0 when not read).
type cpuSample struct {
	wall        time.Time
	proc        time.Duration
	busy, total uint64
	cores       float64 // cores the process may use: GOMAXPROCS, or its CPU limit when lower
}

// cpuSource reads a sample's process and machine parts, and lowers its
// cores to a CPU limit; ok false when the process's CPU time cannot be read
// (the share is then unknown).
type cpuSource interface {
	read(s *cpuSample) (ok bool)
}

const (
	// cpuEvery: the meter reads every cpuEvery governor ticks (40 ms):
	// /proc/stat is rebuilt by the kernel at every read.
	cpuEvery = 2
	// cpuWindow: the share is over the last cpuWindow intervals (120 ms):
	// about the queue's own five-tick window, so the gate adds little to
	// the time a real overload takes to be cut.
	cpuWindow = 3
	// cpuBusy: the share at and over which the governor may start cutting.
	// Well under saturation: the gate only tells a mostly idle CPU (a slow
	// bidder's waves, a client's burst) from a busy one; measured at 90% it
	// delayed the first cut at 2x and 4x and did not spare the 80% runs
	// (docs/reliability.md).
	cpuBusy = 0.7
)

// sample reads the meter at now.
func (m *cpuMeter) sample(now time.Time) {
	s := cpuSample{wall: now, cores: float64(runtime.GOMAXPROCS(0))}
	if m.src == nil || !m.src.read(&s) {
		s = cpuSample{} // unknown: breaks the window until cpuWindow more samples
	}
	m.ring[m.n%len(m.ring)] = s
	m.n++
}

// share is how busy the process's CPUs were over the window ending at the
// last sample, and false when that is unknown (too few samples, or a reading
// failed in the window).
func (m *cpuMeter) share() (float64, bool) {
	for i := range m.ring {
		if m.ring[i].wall.IsZero() { // not taken yet, or a failed reading
			return 0, false
		}
	}
	return busyShare(m.ring[m.n%len(m.ring)], m.ring[(m.n-1)%len(m.ring)]) // the oldest kept, the last
}

// busyShare is the share of the CPUs available to the process that was busy
// between two samples: the higher of its own use of the cores it may use
// and its CPUs' busy time.
func busyShare(a, b cpuSample) (float64, bool) {
	wall := b.wall.Sub(a.wall)
	if wall <= 0 {
		return 0, false
	}
	cores := min(a.cores, b.cores)
	if cores <= 0 {
		return 0, false
	}
	share := float64(b.proc-a.proc) / (float64(wall) * cores)
	if b.total > a.total && b.busy >= a.busy {
		share = max(share, float64(b.busy-a.busy)/float64(b.total-a.total))
	}
	return min(max(share, 0), 1), true
}
