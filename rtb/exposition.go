package rtb

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/VictoriaMetrics/metrics"
)

// The admin listener's /metrics is Prometheus' text format 0.0.4: every
// family once, with `# HELP` and `# TYPE`, histograms with `le` buckets.
// The counters and gauges live in a metrics.Set, the duration histograms
// are histFamily, the Go runtime and process families come from the
// metrics library; WriteMetrics renders all three into one buffer, groups
// the lines by family and writes each family after its metadata.

// metricHelp describes the bid path's families.
var metricHelp = map[string]string{
	"bidguard_build_info":                     "The running binary: version and VCS revision as stamped at build time, Go version; always 1.",
	"bidguard_requests_total":                 "Exchange requests answered, by upstream (none: routed nowhere) and outcome.",
	"bidguard_bids_total":                     "Bids judged, by seat (its seat policy, a quarantine.seats entry, else other) and verdict (passed, rejected, warned).",
	"bidguard_bids_rejected_total":            "Bids removed, by seat, the gate that removed them and the nbr code it gave.",
	"bidguard_bids_skipped_total":             "Bids a per-bid gate did not judge, by gate and why.",
	"bidguard_gate_duration_seconds":          "Time one gate took on one response, in seconds; one judged response in 16 is sampled.",
	"bidguard_upstream_duration_seconds":      "Bidder calls from send to the end of the answer, in seconds, failed calls included.",
	"bidguard_upstream_errors_total":          "Failed bidder calls, by upstream and kind.",
	"bidguard_upstream_resends_total":         "Requests sent once more on a new connection after a keep-alive connection turned out stale.",
	"bidguard_upstream_conns_closed_total":    "Bidder connections closed instead of reused, by reason (idle, stale, stray bytes).",
	"bidguard_shed_total":                     "Requests answered 204 without a bidder call, by reason.",
	"bidguard_inflight_limit":                 "In-flight request limit in force: limits.maxInFlight, or lower while answers leave close to their deadline.",
	"bidguard_connections_open":               "Exchange connections open.",
	"bidguard_connections_refused_total":      "Exchange connections closed at accept, over limits.maxConns.",
	"bidguard_accept_errors_total":            "Accept errors on the exchange listener (retried).",
	"bidguard_panics_total":                   "Panics recovered and answered 204, by where they happened.",
	"bidguard_rejection_log_suppressed_total": "Rejection log lines not written, over log.rejectionsPerSecond.",
	"bidguard_upstream_headers_dropped_total": "Exchange headers not forwarded to the bidder, by upstream and reason (count, size, invalid).",
	"bidguard_upstream_tls_handshake_seconds": "TLS handshakes of new bidder connections, in seconds.",
	"bidguard_upstream_tls_resumed_total":     "TLS handshakes to the bidder that resumed a session.",
	"bidguard_upstream_breaker_state":         "The upstream's circuit breaker: 0 closed, 1 open, 2 half-open.",
	"bidguard_answers_gzipped_total":          "Answers to the exchange sent gzip-compressed.",
}

// runtimeHelp describes the metrics library's Go runtime and process
// families (VictoriaMetrics/metrics' WritePrometheus with process metrics).
var runtimeHelp = map[string]string{
	"go_sched_latencies_seconds":             "Time goroutines spent runnable before running, in seconds.",
	"go_mutex_wait_seconds_total":            "Time goroutines spent blocked on sync.Mutex and sync.RWMutex, in seconds.",
	"go_gc_mark_assist_cpu_seconds_total":    "CPU time goroutines spent assisting the garbage collector, in seconds.",
	"go_gc_cpu_seconds_total":                "CPU time spent in the garbage collector, in seconds.",
	"go_gc_pauses_seconds":                   "Stop-the-world pauses of the garbage collector, in seconds.",
	"go_scavenge_cpu_seconds_total":          "CPU time spent returning memory to the operating system, in seconds.",
	"go_memlimit_bytes":                      "The Go runtime's soft memory limit (GOMEMLIMIT), in bytes.",
	"go_memstats_alloc_bytes":                "Heap bytes allocated and in use.",
	"go_memstats_alloc_bytes_total":          "Heap bytes allocated, freed ones included.",
	"go_memstats_buck_hash_sys_bytes":        "Bytes used by the profiling bucket hash table.",
	"go_memstats_frees_total":                "Heap objects freed.",
	"go_memstats_gc_cpu_fraction":            "Fraction of CPU time used by the garbage collector since start.",
	"go_memstats_gc_sys_bytes":               "Bytes used for garbage collection metadata.",
	"go_memstats_heap_alloc_bytes":           "Heap bytes allocated and in use.",
	"go_memstats_heap_idle_bytes":            "Heap bytes in idle spans.",
	"go_memstats_heap_inuse_bytes":           "Heap bytes in in-use spans.",
	"go_memstats_heap_objects":               "Heap objects allocated and in use.",
	"go_memstats_heap_released_bytes":        "Heap bytes returned to the operating system.",
	"go_memstats_heap_sys_bytes":             "Heap bytes obtained from the operating system.",
	"go_memstats_last_gc_time_seconds":       "When the last garbage collection ended, in seconds since the Unix epoch.",
	"go_memstats_lookups_total":              "Pointer lookups by the runtime.",
	"go_memstats_mallocs_total":              "Heap objects allocated.",
	"go_memstats_mcache_inuse_bytes":         "Bytes in use by mcache structures.",
	"go_memstats_mcache_sys_bytes":           "Bytes obtained from the operating system for mcache structures.",
	"go_memstats_mspan_inuse_bytes":          "Bytes in use by mspan structures.",
	"go_memstats_mspan_sys_bytes":            "Bytes obtained from the operating system for mspan structures.",
	"go_memstats_next_gc_bytes":              "Heap size at which the next garbage collection starts.",
	"go_memstats_other_sys_bytes":            "Bytes of other runtime allocations.",
	"go_memstats_stack_inuse_bytes":          "Bytes in use by goroutine stacks.",
	"go_memstats_stack_sys_bytes":            "Bytes obtained from the operating system for goroutine stacks.",
	"go_memstats_sys_bytes":                  "Bytes obtained from the operating system in all.",
	"go_gc_duration_seconds":                 "Garbage collection pauses, in seconds.",
	"go_gomaxprocs":                          "GOMAXPROCS: the CPUs Go code may run on at once.",
	"go_goroutines":                          "Goroutines that exist now.",
	"go_threads":                             "Operating system threads created by the runtime.",
	"go_info":                                "The Go version the binary was built with; always 1.",
	"go_info_ext":                            "The garbage collector's settings (GOGC); always 1.",
	"process_cpu_seconds_system_total":       "CPU time spent in the kernel, in seconds.",
	"process_cpu_seconds_total":              "CPU time, user and kernel, in seconds.",
	"process_cpu_seconds_user_total":         "CPU time spent in user mode, in seconds.",
	"process_major_pagefaults_total":         "Page faults that needed a disk read.",
	"process_minor_pagefaults_total":         "Page faults served without a disk read.",
	"process_num_threads":                    "Operating system threads of the process.",
	"process_resident_memory_bytes":          "Resident memory, in bytes.",
	"process_start_time_seconds":             "When the process started, in seconds since the Unix epoch.",
	"process_virtual_memory_bytes":           "Virtual memory, in bytes.",
	"process_virtual_memory_peak_bytes":      "Peak virtual memory, in bytes.",
	"process_resident_memory_peak_bytes":     "Peak resident memory, in bytes.",
	"process_resident_memory_anon_bytes":     "Resident anonymous memory, in bytes.",
	"process_resident_memory_file_bytes":     "Resident file-backed memory, in bytes.",
	"process_resident_memory_shared_bytes":   "Resident shared memory, in bytes.",
	"process_io_read_bytes_total":            "Bytes read through read-like system calls.",
	"process_io_written_bytes_total":         "Bytes written through write-like system calls.",
	"process_io_read_syscalls_total":         "Read-like system calls.",
	"process_io_write_syscalls_total":        "Write-like system calls.",
	"process_io_storage_read_bytes_total":    "Bytes read from storage.",
	"process_io_storage_written_bytes_total": "Bytes written to storage.",
	"process_max_fds":                        "File descriptor limit (RLIMIT_NOFILE).",
	"process_open_fds":                       "File descriptors open.",
}

// runtimeTypes corrects the library's types: the process_io_* families
// count up from process start.
var runtimeTypes = map[string]string{
	"process_io_read_bytes_total":            "counter",
	"process_io_written_bytes_total":         "counter",
	"process_io_read_syscalls_total":         "counter",
	"process_io_write_syscalls_total":        "counter",
	"process_io_storage_read_bytes_total":    "counter",
	"process_io_storage_written_bytes_total": "counter",
}

// runtimeLeftOut are library families whose names break Prometheus' naming
// rules (a _count suffix on what is neither a histogram nor a summary,
// which promtool rejects); bidguard builds without cgo and GOMAXPROCS is
// go_gomaxprocs.
var runtimeLeftOut = map[string]bool{"go_cgo_calls_count": true, "go_cpu_count": true, "go_gc_forced_count": true}

// Describe sets the # HELP text of a family the caller registers in
// Metrics() (serve's reload, audit and quarantine series). A family
// nobody describes is still exposed, with a HELP line saying so.
func (s *Server) Describe(family, help string) {
	s.meters.helpMu.Lock()
	defer s.meters.helpMu.Unlock()
	s.meters.help[family] = help
}

// WriteMetrics writes every series in Prometheus text format (0.0.4):
// the bid path's, those registered in Metrics(), the Go runtime's and the
// process's, each family once with its # HELP and # TYPE.
func (s *Server) WriteMetrics(w io.Writer) {
	s.meters.write(w, true)
}

// write renders the families; runtime adds the library's Go runtime and
// process families.
func (m *meters) write(w io.Writer, runtime bool) {
	metrics.ExposeMetadata(true) // the library's # TYPE lines type its families
	var raw bytes.Buffer
	m.set.WritePrometheus(&raw)
	for _, f := range m.hists {
		f.write(&raw)
	}
	if runtime {
		metrics.WritePrometheus(&raw, true)
	}
	m.helpMu.Lock()
	defer m.helpMu.Unlock()
	help := func(fam string) string {
		if h := metricHelp[fam]; h != "" {
			return h
		}
		if h := m.help[fam]; h != "" {
			return h
		}
		if h := runtimeHelp[fam]; h != "" {
			return h
		}
		return fam + " (no description)"
	}
	fams := groupFamilies(raw.Bytes())
	var out bytes.Buffer
	for _, f := range fams {
		if runtimeLeftOut[f.name] {
			continue
		}
		typ := f.typ
		if t := runtimeTypes[f.name]; t != "" {
			typ = t
		}
		out.WriteString("# HELP " + f.name + " " + escapeHelp(help(f.name)) + "\n")
		out.WriteString("# TYPE " + f.name + " " + typ + "\n")
		out.Write(f.lines.Bytes())
	}
	_, _ = w.Write(out.Bytes())
}

// family is one metric family's sample lines.
type family struct {
	name, typ string
	lines     bytes.Buffer
}

// groupFamilies splits Prometheus text into families, in name order. A
// sample belongs to the family of the # TYPE line before it when its name
// is the family's (or, for a histogram or summary, the family's with
// _bucket, _sum or _count); otherwise its name starts a family typed
// counter when it ends in _total, else gauge (a metrics.Set holds only
// counters and gauges here). # HELP lines are dropped: the caller writes
// its own.
func groupFamilies(text []byte) []*family {
	byName := map[string]*family{}
	get := func(name string) *family {
		f := byName[name]
		if f == nil {
			f = &family{name: name}
			byName[name] = f
		}
		return f
	}
	var cur *family
	for line := range bytes.Lines(text) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[len(line)-1] != '\n' {
			line = append(line[:len(line):len(line)], '\n')
		}
		if line[0] == '#' {
			if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
				if fields := strings.Fields(string(rest)); len(fields) == 2 {
					cur = get(fields[0])
					cur.typ = fields[1]
				}
			}
			continue
		}
		end := bytes.IndexAny(line, "{ ")
		if end <= 0 {
			continue // not a sample line
		}
		name := string(line[:end])
		if cur == nil || !cur.owns(name) {
			cur = get(name)
			if cur.typ == "" {
				cur.typ = "gauge"
				if strings.HasSuffix(name, "_total") {
					cur.typ = "counter"
				}
			}
		}
		cur.lines.Write(line)
	}
	fams := make([]*family, 0, len(byName))
	for _, f := range byName {
		fams = append(fams, f)
	}
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	return fams
}

// owns reports whether a sample named name belongs to f.
func (f *family) owns(name string) bool {
	if name == f.name {
		return true
	}
	if f.typ != "histogram" && f.typ != "summary" {
		return false
	}
	suffix, ok := strings.CutPrefix(name, f.name)
	return ok && (suffix == "_sum" || suffix == "_count" || (suffix == "_bucket" && f.typ == "histogram"))
}

// escapeHelp escapes a HELP text: backslash and newline.
func escapeHelp(s string) string { return helpEscaper.Replace(s) }

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
