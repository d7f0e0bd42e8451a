package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

// forgetLoads makes the next load of any config a first load: config keeps
// the seats of the last load of one config file and one seatsDir, and a
// load of another file and directory replaces them.
func forgetLoads(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "seats"), 0o755))
	_, err := config.Parse(filepath.Join(dir, "forget.yaml"), []byte("seatsDir: seats\nseats:\n  x: {}\n"))
	require.NoError(t, err)
}

// loadOnce parses and compiles the config file path from prev.
func loadOnce(prev *engine.Snapshot, path string) (*engine.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(path, data)
	if cfg == nil {
		return nil, err
	}
	snap, cerr := engine.CompileFrom(prev, cfg, path, data, gates.Builtin())
	if err != nil || cerr != nil {
		return nil, fmt.Errorf("%v / %v", err, cerr)
	}
	return snap, nil
}

type compiledGate struct {
	Name, Factory, Mode, Kind string
	Options                   any
}

type compiledPolicy struct {
	Shadow, FailFast bool
	Gates            []compiledGate
}

// policies is what a snapshot's policies mean, by key.
func policies(s *engine.Snapshot) map[string]compiledPolicy {
	out := map[string]compiledPolicy{}
	for _, p := range s.Policies() {
		cp := compiledPolicy{Shadow: p.Shadow, FailFast: p.FailFast}
		for _, e := range p.Gates {
			cp.Gates = append(cp.Gates, compiledGate{e.Name, e.Factory, e.Mode.String(), e.Kind.String(), e.Options})
		}
		out[p.Key] = cp
	}
	return out
}

// reloadAsFresh reloads path from the running snapshot, as serve does, and
// loads it fresh (nothing kept from earlier loads, no previous snapshot):
// both give the same policies, version and description, or the same
// errors. It returns the reload's snapshot and the one to run next: the
// fresh load replaced what config kept of the running load, so next is the
// reload's snapshot compiled once more over what config now keeps (equal
// to it), and running itself when the reload failed.
func reloadAsFresh(t *testing.T, running *engine.Snapshot, path string) (got, next *engine.Snapshot, err error) {
	t.Helper()
	got, err = loadOnce(running, path)
	forgetLoads(t)
	want, wantErr := loadOnce(nil, path)
	require.Equal(t, errText(wantErr), errText(err))
	if err != nil {
		return nil, running, err
	}
	require.Equal(t, want.Version, got.Version)
	require.Equal(t, want.Describe(), got.Describe())
	require.Equal(t, policies(want), policies(got))
	require.NoError(t, engine.CheckInterned(got))
	// The fresh load left config's memos on this config: load once more
	// from them, so that the next step reloads over what a reload keeps.
	again, err := loadOnce(got, path)
	require.NoError(t, err)
	require.Equal(t, got.Version, again.Version)
	require.Equal(t, policies(got), policies(again))
	return got, again, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sameSeat requires that a seat's policy kept its gate instances.
func sameSeat(t *testing.T, old, cur *engine.Snapshot, key string) {
	t.Helper()
	require.Len(t, cur.Seats[key].Gates, len(old.Seats[key].Gates))
	for i, e := range old.Seats[key].Gates {
		require.Same(t, e.Gate, cur.Seats[key].Gates[i].Gate, "%s gate %d", key, i)
	}
}

// A reload of a seatsDir gives exactly what a fresh load gives through
// edits, additions, deletions, renames, a seat back to an earlier content,
// an invalid seat file (the reload fails as a fresh load fails, the running
// snapshot stays) and a change of the default policy; unchanged seats keep
// their gate instances.
func TestSeatsDirReloadAsFresh(t *testing.T) {
	dir := t.TempDir()
	seats := filepath.Join(dir, "seats")
	require.NoError(t, os.Mkdir(seats, 0o755))
	path := filepath.Join(dir, "bidguard.yaml")
	writeConfig := func(action string) {
		require.NoError(t, os.WriteFile(path, []byte("seatsDir: seats\npolicy:\n  action: "+action+"\n  gates:\n    - {gate: bidSanity}\n    - {gate: pii, mode: warn}\n"), 0o644))
	}
	write := func(file, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(seats, file), []byte(text), 0o644))
	}
	seat := func(key string, price int) string {
		return fmt.Sprintf("seat: %s\ngateOptions:\n  rtb.bid-sanity: {options: {maxPrice: %d}}\n", key, price)
	}
	writeConfig("enforce")
	for i := range 4 {
		write(fmt.Sprintf("s%d.yaml", i), seat(fmt.Sprintf("seat-%d", i), i+1))
	}
	write("p.yaml", "seat: p\ngateOptions:\n  pii: {mode: enforce, options: {phone: true}}\n")
	forgetLoads(t)
	running, err := loadOnce(nil, path)
	require.NoError(t, err)
	first := running
	// step makes a change and reloads; it returns the snapshot that ran
	// before and the reload's.
	step := func(change func()) (before, after *engine.Snapshot) {
		t.Helper()
		change()
		before = running
		after, next, err := reloadAsFresh(t, running, path)
		require.NoError(t, err)
		running = next
		return before, after
	}
	before, edited := step(func() { write("s1.yaml", seat("seat-1", 20)) })
	sameSeat(t, before, edited, "seat-0")
	sameSeat(t, before, edited, "p")
	require.Equal(t, 4, engine.ReusedSeats(edited))
	require.NotSame(t, before.Seats["seat-1"].Gates[0].Gate, edited.Seats["seat-1"].Gates[0].Gate)
	before, added := step(func() { write("s4.yaml", seat("seat-4", 5)) })
	sameSeat(t, before, added, "seat-2")
	require.Equal(t, 5, engine.ReusedSeats(added))
	_, deleted := step(func() { require.NoError(t, os.Remove(filepath.Join(seats, "s2.yaml"))) })
	require.NotContains(t, deleted.Seats, "seat-2")
	require.Equal(t, 5, engine.ReusedSeats(deleted))
	before, renamed := step(func() {
		require.NoError(t, os.Rename(filepath.Join(seats, "s3.yaml"), filepath.Join(seats, "t3.yaml")))
	})
	require.Contains(t, renamed.Seats, "seat-3")
	sameSeat(t, before, renamed, "seat-3") // another file: compiled again, the same gates
	require.Equal(t, 4, engine.ReusedSeats(renamed))
	before, back := step(func() { write("s1.yaml", seat("seat-1", 2)) })
	sameSeat(t, before, back, "seat-0")
	require.Equal(t, 4, engine.ReusedSeats(back))
	require.Equal(t, first.Seats["seat-1"].Gates[0].Options, back.Seats["seat-1"].Gates[0].Options)

	// Invalid seat files: a key the config does not know, an option of the
	// wrong type (the gate's error, at its line in the file). The running
	// snapshot stays; the fix reloads as fresh.
	for _, bad := range []string{
		"seat: seat-4\nactio: shadow\n",
		"seat: seat-4\ngateOptions:\n  rtb.bid-sanity:\n    options:\n      maxPrice: lots\n",
	} {
		write("s4.yaml", bad)
		was := running
		_, next, err := reloadAsFresh(t, running, path)
		require.Error(t, err)
		require.Contains(t, err.Error(), filepath.Join(seats, "s4.yaml"))
		require.Same(t, was, next)
	}
	// A fresh load replaced what config kept: the fix compiles every seat
	// again. A failed reload alone does not: its seats decoded as they
	// were keep their origin.
	step(func() { write("s4.yaml", seat("seat-4", 6)) })
	write("s4.yaml", "seat: seat-4\ngateOptions:\n  rtb.bid-sanity:\n    options:\n      maxPrice: lots\n")
	_, err = loadOnce(running, path)
	require.ErrorContains(t, err, filepath.Join(seats, "s4.yaml")+":5: gateOptions.rtb.bid-sanity.options.maxPrice: want a number")
	before, fixed := step(func() { write("s4.yaml", seat("seat-4", 7)) })
	sameSeat(t, before, fixed, "seat-0")
	require.Equal(t, 4, engine.ReusedSeats(fixed))

	// The default policy changes: every seat is compiled again, and still
	// reads as fresh.
	before, shadow := step(func() { writeConfig("shadow") })
	require.True(t, shadow.Seats["seat-0"].Shadow)
	require.Zero(t, engine.ReusedSeats(shadow))
}

// A reload of one config file gives exactly what a fresh load gives through
// the same changes, entries moved to other lines included, and fails as a
// fresh load fails, with the same positions.
func TestConfigFileReloadAsFresh(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bidguard.yaml")
	entry := func(key string, price int) string {
		return fmt.Sprintf("  %s: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: %d}}}}\n", key, price)
	}
	action := "enforce"
	write := func(lines ...string) {
		text := "policy:\n  action: " + action + "\n  gates:\n    - {gate: bidSanity}\n    - {gate: pii, mode: warn}\nseats:\n" + strings.Join(lines, "") + "limits:\n  maxBids: 100\n"
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write(entry("a", 1), entry("b", 2), entry("c", 3), "  p:\n    gateOptions:\n      pii: {mode: enforce}\n")
	forgetLoads(t)
	running, err := loadOnce(nil, path)
	require.NoError(t, err)
	first := running
	step := func(lines ...string) (before, after *engine.Snapshot) {
		t.Helper()
		write(lines...)
		before = running
		after, next, err := reloadAsFresh(t, running, path)
		require.NoError(t, err)
		running = next
		return before, after
	}
	p := "  p:\n    gateOptions:\n      pii: {mode: enforce}\n"
	before, edited := step(entry("a", 1), entry("b", 20), entry("c", 3), p)
	sameSeat(t, before, edited, "a")
	sameSeat(t, before, edited, "c")
	sameSeat(t, before, edited, "p")
	require.Equal(t, 3, engine.ReusedSeats(edited))
	before, moved := step(entry("a", 1), entry("z", 9), entry("b", 20), entry("c", 3), p)
	sameSeat(t, before, moved, "a")
	sameSeat(t, before, moved, "c") // decoded again at its new line, the same gates
	require.Equal(t, 1, engine.ReusedSeats(moved))
	_, renamed := step(entry("a", 1), entry("y", 9), entry("c", 3), p)
	require.NotContains(t, renamed.Seats, "z")
	require.NotContains(t, renamed.Seats, "b")
	require.Equal(t, 1, engine.ReusedSeats(renamed))
	_, back := step(entry("a", 1), entry("b", 2), entry("c", 3), p)
	require.Equal(t, 3, engine.ReusedSeats(back))
	require.Equal(t, first.Seats["b"].Gates[0].Options, back.Seats["b"].Gates[0].Options)

	for _, bad := range [][]string{
		{entry("a", 1), "  b: {actio: shadow}\n", entry("c", 3), p},
		{entry("a", 1), "  b:\n    gateOptions:\n      rtb.bid-sanity:\n        options: {maxPrice: lots}\n", entry("c", 3), p},
		{entry("a", 1), "  b: {addGates: [{gate: bidSanity, options: {maxPrice: 1}}]}\n", entry("c", 3), p},
		{entry("a", 1), entry("b", 2), entry("a", 3), p},
	} {
		write(bad...)
		was := running
		_, next, err := reloadAsFresh(t, running, path)
		require.Error(t, err)
		require.Same(t, was, next)
	}
	// As with a seatsDir: after a fresh load, the fix compiles every seat
	// again; after a failed reload alone, not.
	step(entry("a", 1), entry("b", 2), entry("c", 3), p)
	write(entry("a", 1), "  b: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: lots}}}}\n", entry("c", 3), p)
	_, err = loadOnce(running, path)
	require.ErrorContains(t, err, path+":8: seats.b.gateOptions.rtb.bid-sanity.options.maxPrice: want a number")
	before, fixed := step(entry("a", 1), entry("b", 5), entry("c", 3), p)
	sameSeat(t, before, fixed, "a")
	require.Equal(t, 3, engine.ReusedSeats(fixed))

	// The default policy changes: every seat is compiled again, those
	// kept from the load before from their text decoded again.
	action = "shadow"
	_, shadow := step(entry("a", 1), entry("b", 5), entry("c", 3), p)
	require.Zero(t, engine.ReusedSeats(shadow))
	require.True(t, shadow.Seats["a"].Shadow)
}
