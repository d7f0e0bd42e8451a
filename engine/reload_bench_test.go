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
		text := fmt.Sprintf("seat: seat-%d\ngateOptions:\n  rtb.bid-sanity: {options: {maxPrice: %d}}\n", i, i+1)
		require.NoError(tb, os.WriteFile(filepath.Join(seats, fmt.Sprintf("seat-%05d.yaml", i)), []byte(text), 0o644))
	}
	path := filepath.Join(dir, "bidguard.yaml")
	data := []byte("seatsDir: seats\n")
	require.NoError(tb, os.WriteFile(path, data, 0o644))
	return path, data
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

// BenchmarkReloadSeatsDir is a reload of a seatsDir of 10,000 seat files
// that each override one option, none changed since the snapshot in use.
func BenchmarkReloadSeatsDir(b *testing.B) {
	path, data := seatsDirConfig(b, b.TempDir(), 10000)
	prev := reload(b, nil, path, data)
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		prev = reload(b, prev, path, data)
	}
	reportCPU(b, cpu)
}

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
// files with one changed file per reload), then waits as long as the
// reload took, and again. Each judging is counted as during a reload or
// between two: the two sets of latencies, taken in turn, see the same
// load of the machine. It reports their quantiles in µs and the reloads
// done. Run it long enough for several reloads: -benchtime 10s.
func BenchmarkRunDuringReload(b *testing.B) {
	req, resp := readTypical(b)
	data := seatsConfig(10000, oneOption)
	dir := b.TempDir()
	dirPath, dirData := seatsDirConfig(b, dir, 10000)
	changed := filepath.Join(dir, "seats", "seat-00017.yaml")
	for _, c := range []struct {
		name   string
		path   string
		data   []byte
		change func(i int)
	}{
		{"file", "seats.yaml", data, func(int) {}},
		{"seatsDir", dirPath, dirData, func(i int) {
			text := fmt.Sprintf("seat: seat-17\ngateOptions:\n  rtb.bid-sanity: {options: {maxPrice: %d}}\n", 100+i%2)
			if err := os.WriteFile(changed, []byte(text), 0o644); err != nil {
				panic(err)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var holder engine.Holder
			holder.Store(reload(b, nil, c.path, c.data))
			stop := make(chan struct{})
			var done sync.WaitGroup
			var reloads atomic.Int64
			var reloading atomic.Bool
			done.Add(1)
			go func() {
				defer done.Done()
				for i := 0; ; i++ {
					c.change(i)
					start := time.Now()
					reloading.Store(true)
					holder.Store(reload(b, holder.Load(), c.path, c.data))
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
