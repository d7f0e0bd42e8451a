package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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

// TestSeatPolicyMemory measures what 10,000 seats that each override one
// option cost in live heap, their parsed config and what config keeps of
// them for the next load included (docs/design.md "Seat policies"), and
// fails far above it: 29 KB per seat before seat policies held only their
// differences, 1.0 KB after, 1.6 KB since a reload keeps the seats.
func TestSeatPolicyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 10,000 seats")
	}
	const n = 10000
	for _, c := range []struct {
		name  string
		entry func(int) string
	}{{"one option", oneOption}, {"action only", func(int) string { return "{action: enforce}" }}} {
		data := seatsConfig(n, c.entry)
		forgetLoads(t) // what config kept of the case before
		before := heapAfter()
		snap := compileSeats(t, data)
		after := heapAfter()
		per := (int64(after) - int64(before)) / n
		t.Logf("%d seats, %s: %d bytes live per seat", n, c.name, per)
		require.Less(t, per, int64(4<<10), c.name)
		runtime.KeepAlive(snap)
	}
}

// Seats share what they do not change: the inherited entries, an override
// with the same options, a gate list equal to another seat's; a mode
// override is its own entry over the same gate instance. Each seat still
// judges with its own options.
func TestSeatsShareWhatTheyDoNotChange(t *testing.T) {
	text := "policy:\n  gates:\n    - {gate: impidMatch}\n    - {gate: bidSanity}\n    - {gate: pii, mode: warn}\n" +
		"seats:\n" +
		"  a: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: 5}}}}\n" +
		"  b: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: 5}}}}\n" +
		"  c: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: 6}}}}\n" +
		"  d: {action: shadow}\n" +
		"  e: {failFast: false}\n" +
		"  f: {gateOptions: {pii: {mode: enforce}}}\n"
	snap := compileSeats(t, []byte(text))
	a, b, c, d, e, f := snap.Seats["a"], snap.Seats["b"], snap.Seats["c"], snap.Seats["d"], snap.Seats["e"], snap.Seats["f"]
	require.Same(t, a.Gates[0], c.Gates[0])
	require.Same(t, a.Gates[2], d.Gates[2])
	require.Same(t, a.Gates[1], b.Gates[1], "equal overrides share one entry")
	require.NotSame(t, a.Gates[1], c.Gates[1])
	require.NotSame(t, a.Gates[1], d.Gates[1])
	require.Same(t, &a.Gates[0], &b.Gates[0], "equal gate lists are one list")
	require.Same(t, &d.Gates[0], &e.Gates[0])
	require.NotSame(t, &a.Gates[0], &c.Gates[0])
	require.True(t, d.Shadow)
	require.False(t, e.FailFast)
	require.NotSame(t, d.Gates[2], f.Gates[2])
	require.Equal(t, engine.Warn, d.Gates[2].Mode)
	require.Equal(t, engine.Enforce, f.Gates[2].Mode)
	require.Same(t, d.Gates[2].Gate, f.Gates[2].Gate)
	require.NotSame(t, snap.Default.Gates[1], d.Gates[1], "seat gates are built for a seat (Env.InSeat)")

	req := `{"id":"r","imp":[{"id":"1"}]}`
	resp := `{"id":"r","seatbid":[{"seat":"a","bid":[{"id":"a1","impid":"1","price":5.5}]},` +
		`{"seat":"b","bid":[{"id":"b1","impid":"1","price":5.5}]},{"seat":"c","bid":[{"id":"c1","impid":"1","price":5.5}]}]}`
	rep, ev, err := engine.Check(snap, []byte(req), []byte(resp), engine.CheckOptions{LatencyMs: -1})
	require.NoError(t, err)
	defer engine.ReleaseEval(ev)
	var rejected []string
	for _, h := range rep.Rejected {
		rejected = append(rejected, h.BidID+" "+h.Reason)
	}
	require.Equal(t, []string{"a1 bid price 5.5 exceeds maxPrice 5", "b1 bid price 5.5 exceeds maxPrice 5"}, rejected)
}

// A reload builds only the gates whose options changed; a gate that read a
// file is built again, since the file may have changed, and stays polled.
// The version does not depend on what was reused.
func TestReloadReusesUnchangedGates(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "resp.json")
	require.NoError(t, os.WriteFile(schema, []byte(`{"type":"object"}`), 0o644))
	path := filepath.Join(dir, "bidguard.yaml")
	text := func(price int) []byte {
		return []byte(fmt.Sprintf("policy:\n  gates:\n    - {gate: bidSanity}\n    - {gate: schema, options: {file: resp.json}}\n"+
			"seats:\n  a: {failFast: false}\n  c: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: %d}}}}\n", price))
	}
	load := func(prev *engine.Snapshot, data []byte) *engine.Snapshot {
		cfg, err := config.Parse(path, data)
		require.NoError(t, err)
		snap, err := engine.CompileFrom(prev, cfg, path, data, gates.Builtin())
		require.NoError(t, err)
		return snap
	}
	old := load(nil, text(5))
	same := load(old, text(5))
	changed := load(old, text(6))
	require.Equal(t, old.Version, same.Version)
	require.NotEqual(t, old.Version, changed.Version)
	require.Equal(t, load(nil, text(6)).Version, changed.Version)
	for _, s := range []*engine.Snapshot{same, changed} {
		require.Same(t, old.Default.Gates[0].Gate, s.Default.Gates[0].Gate)
		require.Same(t, old.Seats["a"].Gates[0].Gate, s.Seats["a"].Gates[0].Gate)
		require.NotSame(t, old.Default.Gates[1].Gate, s.Default.Gates[1].Gate)
		require.Contains(t, s.Files, schema)
	}
	require.Same(t, old.Seats["c"].Gates[0].Gate, same.Seats["c"].Gates[0].Gate)
	require.NotSame(t, old.Seats["c"].Gates[0].Gate, changed.Seats["c"].Gates[0].Gate)
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

// BenchmarkRunBids judges responses of n bids under the embedded default
// policy, the bids of one seat or each of its own seat policy (10,000 seats
// configured, each overriding one option): the cost per bid should not grow
// with the bids or with the seat policies they bring.
func BenchmarkRunBids(b *testing.B) {
	req := []byte(`{"id":"r","imp":[{"id":"1","bidfloor":0.5,"banner":{"w":300,"h":250}}],"cur":["USD"],"site":{"domain":"pub.example"},"tmax":1000}`)
	snap := compileSeats(b, seatsConfig(10000, oneOption))
	for _, seats := range []string{"one seat", "a seat each"} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/%d", seats, n), func(b *testing.B) {
				var r strings.Builder
				r.WriteString(`{"id":"r","cur":"USD","seatbid":[`)
				for i := range n {
					if i > 0 {
						r.WriteByte(',')
					}
					seat := "seat-1"
					if seats != "one seat" {
						seat = fmt.Sprintf("seat-%d", i)
					}
					fmt.Fprintf(&r, `{"seat":%q,"bid":[{"id":"b%d","impid":"1","price":1,"crid":"c","adomain":["brand.com"],"w":300,"h":250,"mtype":1,"adm":"<div>ad</div>"}]}`, seat, i)
				}
				r.WriteString(`]}`)
				resp := []byte(r.String())
				ev := engine.AcquireEval()
				defer engine.ReleaseEval(ev)
				require.NoError(b, ev.DecodeRequest(req))
				require.NoError(b, ev.DecodeResponse(resp, 1000))
				b.ReportAllocs()
				for b.Loop() {
					now := time.Now()
					ev.SetDeadline(now, now.Add(time.Second))
					ev.Run(snap, engine.RunOptions{})
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/bid")
			})
		}
	}
}

// The version hashes what was compiled, not where the config lies: the
// directory is part of a gate's intern key (relative paths resolve against
// it) but not of the version (the files read are hashed with their paths).
func TestVersionDoesNotDependOnTheConfigsDirectory(t *testing.T) {
	data := seatsConfig(3, oneOption)
	version := func(name string) string {
		cfg, err := config.Parse(name, data)
		require.NoError(t, err)
		snap, err := engine.Compile(cfg, name, data, gates.Builtin())
		require.NoError(t, err)
		return snap.Version
	}
	require.Equal(t, version("/etc/bidguard/bidguard.yaml"), version("/srv/other/bidguard.yaml"))
	require.NotEqual(t, version("x.yaml"), func() string {
		other := seatsConfig(3, func(i int) string { return oneOption(i + 1) })
		cfg, err := config.Parse("x.yaml", other)
		require.NoError(t, err)
		snap, err := engine.Compile(cfg, "x.yaml", data, gates.Builtin())
		require.NoError(t, err)
		return snap.Version
	}(), "the same bytes compiled to other options: another version")
}

// Sharing changes nothing a seat means: each seat of a config compiles to
// the gates (names, modes, kinds, options) it compiles to alone.
func TestSeatsCompileAsIfAlone(t *testing.T) {
	seats := map[string]string{
		"a": "{gateOptions: {rtb.bid-sanity: {options: {maxPrice: 5}}}}",
		"b": "{gateOptions: {rtb.bid-sanity: {options: {maxPrice: 5}}, pii: {mode: enforce}}}",
		"c": "{gateOptions: {rtb.bid-sanity: {mode: warn, options: {maxFloorMultiple: 7}}}}",
		"d": "{action: shadow, failFast: false}",
		"e": "{addGates: [{gate: bidSanity, name: strict, options: {maxPrice: 5}}]}",
		"f": "{replaceGates: true, gates: [{gate: pii, options: {phone: true}}, {gate: bidSanity, options: {maxPrice: 5}}]}",
		"g": "{replaceGates: true, gates: [{gate: pii, options: {phone: true}}], gateOptions: {pii: {options: {email: false}}}}",
		"h": "{gateOptions: {content: {options: {extraPhrases: [buy now]}}, pii: {options: {ssn: false}}}}",
		"i": "{gateOptions: {content: {options: {extraPhrases: [buy now]}}}}",
		"j": "{addGates: [{gate: seatPolicy, options: {rules: [{id: r, action: deny, field: adomain, match: exact, values: [bad.com]}]}}]}",
	}
	text := func(keys ...string) []byte {
		var b strings.Builder
		b.WriteString("seats:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %s\n", k, seats[k])
		}
		return []byte(b.String())
	}
	type gate struct {
		Name, Factory, Mode, Kind string
		Options                   any
	}
	describe := func(p *engine.Policy) (out []gate) {
		for _, e := range p.Gates {
			out = append(out, gate{e.Name, e.Factory, e.Mode.String(), e.Kind.String(), e.Options})
		}
		return out
	}
	var keys []string
	for k := range seats {
		keys = append(keys, k)
	}
	all := compileSeats(t, text(keys...))
	for _, k := range keys {
		alone := compileSeats(t, text(k))
		require.Equal(t, describe(alone.Seats[k]), describe(all.Seats[k]), k)
		require.Equal(t, alone.Seats[k].Shadow, all.Seats[k].Shadow, k)
		require.Equal(t, alone.Seats[k].FailFast, all.Seats[k].FailFast, k)
	}
	require.Equal(t, describe(compileSeats(t, text()).Default), describe(all.Default))
}
