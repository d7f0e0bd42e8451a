package engine_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

// seatsConfig is a config of n seat policies over the embedded default
// policy; seat i is what entry(i) writes under its key.
func seatsConfig(n int, entry func(i int) string) []byte {
	var b strings.Builder
	b.WriteString("seats:\n")
	for i := range n {
		fmt.Fprintf(&b, "  seat-%d: %s\n", i, entry(i))
	}
	return []byte(b.String())
}

// oneOption is a seat that overrides one gate option, each seat its own value.
func oneOption(i int) string {
	return fmt.Sprintf("{gateOptions: {rtb.bid-sanity: {options: {maxPrice: %d}}}}", i+1)
}

func compileSeats(tb testing.TB, data []byte) *engine.Snapshot {
	tb.Helper()
	cfg, err := config.Parse("seats.yaml", data)
	require.NoError(tb, err)
	snap, err := engine.Compile(cfg, "seats.yaml", data, gates.Builtin())
	require.NoError(tb, err)
	return snap
}

// heapAfter is the live heap after a full collection.
func heapAfter() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestSeatPolicyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 10,000 seats")
	}
	data := seatsConfig(10000, oneOption)
	before := heapAfter()
	snap := compileSeats(t, data)
	after := heapAfter()
	t.Logf("10000 seats: %d bytes live, %d per seat", after-before, (after-before)/10000)
	runtime.KeepAlive(snap)
}

func BenchmarkCompileSeats(b *testing.B) {
	data := seatsConfig(10000, oneOption)
	b.ReportAllocs()
	for b.Loop() {
		compileSeats(b, data)
	}
}

func BenchmarkValidateSeats(b *testing.B) {
	data := seatsConfig(10000, oneOption)
	b.ReportAllocs()
	for b.Loop() {
		_ = compileSeats(b, data).Describe()
	}
}
