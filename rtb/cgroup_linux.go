package rtb

import (
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
)

// cgroupQuota reads the CPU bandwidth limit that applies to the process:
// the tightest of its cgroup's and its ancestors' (the kernel enforces every
// level). Go's default GOMAXPROCS under a limit is at least 2, so a sidecar
// limited to one core that uses all of it reads only 50% of GOMAXPROCS; the
// governor's CPU share divides by the limit instead.
type cgroupQuota struct {
	levels []quotaLevel // leaf first
	buf    [64]byte
}

// quotaLevel is one cgroup's limit files: cpu.max (v2), or
// cpu.cfs_quota_us and cpu.cfs_period_us (v1).
type quotaLevel struct {
	max, quota, period *os.File
}

// maxQuotaLevels bounds the ancestors read.
const maxQuotaLevels = 16

// openCgroupQuota finds the process's cgroup in self (the text of
// /proc/self/cgroup) under root (/sys/fs/cgroup) and opens the limit files
// of it and its ancestors that exist. Without any, the limit is unknown
// (none).
func openCgroupQuota(self []byte, root string) *cgroupQuota {
	q := &cgroupQuota{}
	for _, line := range strings.Split(string(self), "\n") {
		// hierarchy-ID:controllers:path
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			q.open(p, func(dir string) (quotaLevel, bool) {
				f, err := os.Open(path.Join(root, dir, "cpu.max"))
				return quotaLevel{max: f}, err == nil
			})
		case hasController(controllers, "cpu"):
			mount := path.Join(root, controllers)
			if _, err := os.Stat(mount); err != nil {
				mount = path.Join(root, "cpu")
			}
			q.open(p, func(dir string) (quotaLevel, bool) {
				fq, err := os.Open(path.Join(mount, dir, "cpu.cfs_quota_us"))
				if err != nil {
					return quotaLevel{}, false
				}
				fp, err := os.Open(path.Join(mount, dir, "cpu.cfs_period_us"))
				if err != nil {
					_ = fq.Close()
					return quotaLevel{}, false
				}
				return quotaLevel{quota: fq, period: fp}, true
			})
		}
	}
	return q
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// open adds the levels of p and its ancestors that openLevel finds.
func (q *cgroupQuota) open(p string, openLevel func(dir string) (quotaLevel, bool)) {
	for dir := path.Clean(p); len(q.levels) < maxQuotaLevels; dir = path.Dir(dir) {
		if l, ok := openLevel(dir); ok {
			q.levels = append(q.levels, l)
		}
		if dir == "/" {
			return
		}
	}
}

// cores is the tightest limit in cores now, 0 when none applies or none
// could be read.
func (q *cgroupQuota) cores() float64 {
	limit := 0.0
	for _, l := range q.levels {
		var quota, period int64
		if l.max != nil {
			// cgroup v2: "$MAX $PERIOD", $MAX "max" for no limit
			qs, ps, _ := bytes.Cut(q.read(l.max), []byte(" "))
			quota, period = micros(qs), micros(ps)
		} else {
			quota = micros(q.read(l.quota)) // -1 for no limit
			period = micros(q.read(l.period))
		}
		if quota <= 0 || period <= 0 {
			continue
		}
		if c := float64(quota) / float64(period); limit == 0 || c < limit {
			limit = c
		}
	}
	return limit
}

// read returns f's content, trimmed, in q.buf: valid until the next read.
func (q *cgroupQuota) read(f *os.File) []byte {
	n, _ := f.ReadAt(q.buf[:], 0)
	return bytes.TrimSpace(q.buf[:n])
}

// micros reads a duration in µs; 0 when b is not a number ("max").
func micros(b []byte) int64 {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return v
}
