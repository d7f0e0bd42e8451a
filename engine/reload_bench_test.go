package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

// seatsDirConfig writes n seat files into a seatsDir under dir, seat i
// overriding one option as oneOption does, and returns the config file
// that names it and its bytes.
func seatsDirConfig(tb testing.TB, dir string, n int) (string, []byte) {
	tb.Helper()
	seats := filepath.Join(dir, "seats")
	require.NoError(tb, os.MkdirAll(seats, 0o755))
	for i := range n {
		require.NoError(tb, os.WriteFile(filepath.Join(seats, fmt.Sprintf("seat-%06d.yaml", i)), []byte(seatFile(i, i+1)), 0o644))
	}
	path := filepath.Join(dir, "bidguard.yaml")
	data := []byte("seatsDir: seats\n")
	require.NoError(tb, os.WriteFile(path, data, 0o644))
	return path, data
}

// seatFile is the seat file of seat i overriding maxPrice.
func seatFile(i, maxPrice int) string {
	return fmt.Sprintf("seat: seat-%d\ngateOptions:\n  rtb.bid-sanity: {options: {maxPrice: %d}}\n", i, maxPrice)
}

// reload parses data (the config file path) and compiles it from prev.
func reload(tb testing.TB, prev *engine.Snapshot, path string, data []byte) *engine.Snapshot {
	tb.Helper()
	cfg, err := config.Parse(path, data)
	require.NoError(tb, err)
	snap, err := engine.CompileFrom(prev, cfg, path, data, gates.Builtin())
	require.NoError(tb, err)
	return snap
}

// reloadKinds are the two places seats are configured in: the config
// file, or a seatsDir of one file per seat.
var reloadKinds = []string{"file", "seatsDir"}

// reloadCase writes a config of n seats that each override one option, in
// the config file or a seatsDir (kind), and returns the config file's path
// and the change a reload loads: change(i) edits seat 17 for reload i
// (its maxPrice, or failFast in place of it, alternately) and returns the
// config file's bytes.
func reloadCase(tb testing.TB, kind string, n int) (path string, change func(i int) []byte) {
	dir := tb.TempDir()
	if kind == "file" {
		a := seatsConfig(n, oneOption)
		b := seatsConfig(n, func(i int) string {
			if i == 17 {
				return "{failFast: false}"
			}
			return oneOption(i)
		})
		return filepath.Join(dir, "seats.yaml"), func(i int) []byte {
			if i%2 == 1 {
				return b
			}
			return a
		}
	}
	path, data := seatsDirConfig(tb, dir, n)
	changed := filepath.Join(dir, "seats", "seat-000017.yaml")
	return path, func(i int) []byte {
		if err := os.WriteFile(changed, []byte(seatFile(17, 100+i%2)), 0o644); err != nil {
			panic(err)
		}
		return data
	}
}

// BenchmarkReloadSeats is a reload as serve makes one: a config of n seats
// that each override one option, one of them changed since the snapshot in
// use, parsed and compiled from that snapshot; in one config file or in a
// seatsDir of n files. Run the 100,000 seats with -benchtime 5x.
func BenchmarkReloadSeats(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, kind := range reloadKinds {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				path, change := reloadCase(b, kind, n)
				prev := reload(b, nil, path, change(0))
				b.ReportAllocs()
				cpu := processCPU()
				i := 1
				for b.Loop() {
					prev = reload(b, prev, path, change(i))
					i++
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// reloadNice is the nice value serve reloads at (cmd/bidguard).
const reloadNice = 10

// reportCPU reports the process's CPU time per operation since cpu (GC
// included), in ms.
func reportCPU(b *testing.B, cpu int64) {
	b.ReportMetric(float64(processCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// latencies is a histogram of durations in 1 µs buckets up to 100 ms (the
// last bucket holds everything above).
type latencies struct {
	n       int
	buckets [100_001]uint32
}

func (l *latencies) add(d time.Duration) {
	l.n++
	l.buckets[min(int(d/time.Microsecond), len(l.buckets)-1)]++
}

// quantile is the upper bound of the bucket holding quantile q, in µs.
func (l *latencies) quantile(q float64) float64 {
	rank := int(q * float64(l.n))
	seen := 0
	for i, c := range l.buckets {
		seen += int(c)
		if seen > rank {
			return float64(i + 1)
		}
	}
	return float64(len(l.buckets))
}

// BenchmarkRunDuringReload judges the typical pair as the bid path does
// (an Eval from the pool, both decoded, the snapshot in use run) on one
// goroutine, with 10,000 seat policies configured, while another goroutine
// reloads them (the config file of 10,000 seats, or a seatsDir of 10,000
// files, one seat changed per reload: reloadCase), then waits as long as the
// reload took, and again. Each judging is counted as during a reload or
// between two: the two sets of latencies, taken in turn, see the same
// load of the machine. It reports their quantiles in µs and the reloads
// done. The reloads run at nice 0, and at reloadNice on a thread of their
// own as serve runs them (Linux). Run it long enough for several reloads:
// -benchtime 10s.
func BenchmarkRunDuringReload(b *testing.B) {
	req, resp := readTypical(b)
	for _, c := range []struct {
		kind string
		nice int
	}{{"file", 0}, {"seatsDir", 0}, {"file", reloadNice}, {"seatsDir", reloadNice}} {
		kind := c.kind
		b.Run(fmt.Sprintf("%s/nice%d", kind, c.nice), func(b *testing.B) {
			path, change := reloadCase(b, kind, 10000)
			var holder engine.Holder
			holder.Store(reload(b, nil, path, change(0)))
			stop := make(chan struct{})
			var done sync.WaitGroup
			var reloads atomic.Int64
			var reloading atomic.Bool
			done.Add(1)
			go func() {
				defer done.Done()
				if c.nice > 0 {
					atNice(c.nice)
				}
				for i := 1; ; i++ {
					data := change(i)
					start := time.Now()
					reloading.Store(true)
					holder.Store(reload(b, holder.Load(), path, data))
					reloading.Store(false)
					reloads.Add(1)
					select {
					case <-stop:
						return
					case <-time.After(time.Since(start)):
					}
				}
			}()
			var idle, during latencies
			b.ReportAllocs()
			for b.Loop() {
				lat := &idle
				if reloading.Load() {
					lat = &during
				}
				start := time.Now()
				ev := engine.AcquireEval()
				if ev.DecodeRequest(req) != nil || ev.DecodeResponse(resp, 1000) != nil {
					b.Fatal("typical pair does not decode")
				}
				ev.SetDeadline(start, start.Add(time.Hour))
				ok := ev.Run(holder.Load(), engine.RunOptions{}).Passed()
				engine.ReleaseEval(ev)
				lat.add(time.Since(start))
				if !ok {
					b.Fatal("typical pair rejected")
				}
			}
			close(stop)
			done.Wait()
			b.ReportMetric(idle.quantile(0.5), "p50-idle-µs")
			b.ReportMetric(during.quantile(0.5), "p50-reload-µs")
			b.ReportMetric(idle.quantile(0.99), "p99-idle-µs")
			b.ReportMetric(during.quantile(0.99), "p99-reload-µs")
			b.ReportMetric(float64(reloads.Load()), "reloads")
		})
	}
}
