package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
