package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A target's own CPU time, read from /proc around each attack: user plus
// system time (utime + stime of /proc/<pid>/stat, every thread included,
// those that exited too) of every process of the target's process group
// (each child runs in its own: nginx's master and its workers, a Go binary)
// and of any descendant that left the group. The kernel counts in clock
// ticks (10 ms at the usual 100 Hz), so an attack should use at least some
// tenths of a CPU second for the figure to mean something.

// procStat is what the table needs of one /proc/<pid>/stat line.
type procStat struct {
	pid, ppid, pgrp int
	ticks           uint64 // utime + stime
}

// parseProcStat reads a /proc/<pid>/stat line: "pid (comm) state ppid pgrp
// ...", utime and stime the 14th and 15th fields. comm may hold spaces and
// parentheses: the fields after it start after the last ')'.
func parseProcStat(line string) (procStat, error) {
	open, closing := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || closing < open {
		return procStat{}, fmt.Errorf("stat line %.40q: no (comm)", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procStat{}, fmt.Errorf("stat line %.40q: pid: %w", line, err)
	}
	f := strings.Fields(line[closing+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("stat line %.40q: %d fields after comm, want at least 13", line, len(f))
	}
	ppid, err1 := strconv.Atoi(f[4-3])
	pgrp, err2 := strconv.Atoi(f[5-3])
	utime, err3 := strconv.ParseUint(f[14-3], 10, 64)
	stime, err4 := strconv.ParseUint(f[15-3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return procStat{}, fmt.Errorf("stat line %.40q: %w", line, err)
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, ticks: utime + stime}, nil
}

// readProcStats reads the stat line of every process under proc (/proc).
// A process that exits while the directory is walked is left out.
func readProcStats(proc string) ([]procStat, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var stats []procStat
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // exited meanwhile
		}
		if err != nil {
			return nil, err
		}
		s, err := parseProcStat(string(data))
		if err != nil {
			return nil, err
		}
		stats = append(stats, s)
	}
	return stats, nil
}

// groupTicks sums the ticks of the processes of group pgid and of their
// descendants.
func groupTicks(stats []procStat, pgid int) uint64 {
	in := map[int]bool{}
	for _, s := range stats {
		if s.pgrp == pgid {
			in[s.pid] = true
		}
	}
	for grew := true; grew; { // descendants outside the group, to any depth
		grew = false
		for _, s := range stats {
			if !in[s.pid] && in[s.ppid] {
				in[s.pid], grew = true, true
			}
		}
	}
	var ticks uint64
	for _, s := range stats {
		if in[s.pid] {
			ticks += s.ticks
		}
	}
	return ticks
}

// groupCPU is the CPU time used so far by the processes of group pgid and
// their descendants.
func groupCPU(proc string, pgid int) (time.Duration, error) {
	stats, err := readProcStats(proc)
	if err != nil {
		return 0, err
	}
	return time.Duration(groupTicks(stats, pgid)) * time.Second / time.Duration(clockTicks), nil
}

// clockTicks is the kernel's clock ticks per second for /proc (USER_HZ),
// from the auxiliary vector (AT_CLKTCK), else 100, Linux's value on every
// architecture Go supports.
var clockTicks = readClockTicks("/proc/self/auxv")

func readClockTicks(auxv string) uint64 {
	const atClkTck = 17
	data, err := os.ReadFile(auxv)
	if err != nil {
		return 100
	}
	for i := 0; i+16 <= len(data); i += 16 { // (type, value) pairs of 64-bit words
		typ, val := binary.NativeEndian.Uint64(data[i:]), binary.NativeEndian.Uint64(data[i+8:])
		if typ == atClkTck && val > 0 {
			return val
		}
	}
	return 100
}
