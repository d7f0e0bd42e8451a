package rtb

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// linuxCPU reads the process's CPU time with getrusage(2) and the busy time
// of its CPUs from /proc/stat.
type linuxCPU struct {
	stat    *os.File // nil: /proc/stat unreadable, the process's share only
	allowed unix.CPUSet
	buf     []byte
	quota   *cgroupQuota
}

// newCPUSource opens /proc/stat and reads the affinity mask once: a mask
// changed later (taskset on a running process) is not followed.
func newCPUSource() cpuSource {
	c := &linuxCPU{quota: &cgroupQuota{}}
	if self, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		c.quota = openCgroupQuota(self, "/sys/fs/cgroup")
	}
	if unix.SchedGetaffinity(0, &c.allowed) != nil {
		return c
	}
	f, err := os.Open("/proc/stat")
	if err != nil {
		return c
	}
	c.stat = f
	// The "cpu" lines come first: at most 11 numbers of 20 digits each.
	c.buf = make([]byte, 256*(c.allowed.Count()+1)+4096)
	return c
}

func (c *linuxCPU) read(s *cpuSample) bool {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return false
	}
	s.proc = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if limit := c.quota.cores(); limit > 0 {
		s.cores = min(s.cores, limit)
	}
	if c.stat != nil {
		n, err := c.stat.ReadAt(c.buf, 0)
		if n > 0 && (err == nil || n < len(c.buf)) {
			s.busy, s.total = procStatBusy(c.buf[:n], &c.allowed)
		}
	}
	return true
}

// procStatBusy sums the busy and total clock ticks of the CPUs in allowed
// from the per-CPU lines of /proc/stat ("cpuN user nice system idle iowait
// irq softirq steal guest guest_nice"; guest time is inside user). Idle and
// iowait are not busy; steal is. It stops at the first line after them, and
// at a line cut short by the end of data.
func procStatBusy(data []byte, allowed *unix.CPUSet) (busy, total uint64) {
	for len(data) > 0 {
		end := 0
		for end < len(data) && data[end] != '\n' {
			end++
		}
		if end == len(data) {
			return busy, total // the buffer ended inside a line
		}
		line := data[:end]
		data = data[end+1:]
		if len(line) < 4 || string(line[:3]) != "cpu" {
			return busy, total
		}
		if line[3] == ' ' {
			continue // the machine's total
		}
		cpu, rest, ok := number(line[3:])
		if !ok || !allowed.IsSet(int(cpu)) {
			continue
		}
		for field := 0; field < 8; field++ {
			v, r, ok := number(rest)
			if !ok {
				break
			}
			rest = r
			total += v
			if field != 3 && field != 4 { // idle, iowait
				busy += v
			}
		}
	}
	return busy, total
}

// number reads the decimal number at the start of b after any spaces, and
// returns it with the rest of b.
func number(b []byte) (v uint64, rest []byte, ok bool) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + uint64(b[i]-'0')
		i++
	}
	return v, b[i:], i > start
}
