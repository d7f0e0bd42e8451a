package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/bidguard/bidguard/internal/testserve"
)

// writeAtomic replaces a file the way careful deploy tools do (write, then
// rename), so a poll never sees it half written.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// listFileGate is a test gate reading the file its `file` option names, as
// a gate with a list file does: it registers the file with env.Watch.
type listFileGate struct{}

func (listFileGate) Kind() engine.Kind                                  { return engine.PerBid }
func (listFileGate) Prepare(*engine.Input) string                       { return "" }
func (listFileGate) CheckBid(*engine.Input, *engine.Bid) engine.Verdict { return engine.Pass() }

type listFileOptions struct {
	File string `yaml:"file"`
}

func testRegistry() engine.Registry {
	reg := engine.Registry{}
	for k, v := range gates.Builtin() {
		reg[k] = v
	}
	reg["listFile"] = engine.Factory{
		Name: "listFile", ResultName: "test.list-file", Kind: engine.PerBid,
		Options: func() any { return &listFileOptions{} },
		New: func(opts any, env engine.Env) (engine.Gate, error) {
			p := filepath.Join(env.Dir, opts.(*listFileOptions).File)
			if _, err := os.ReadFile(p); err != nil {
				return nil, err
			}
			env.Watch(p)
			return listFileGate{}, nil
		},
	}
	return reg
}

// reloadFixture is a reloader over a config in a temp dir, driven by
// direct calls to check (no timers).
type reloadFixture struct {
	t      *testing.T
	dir    string
	holder engine.Holder
	set    *metrics.Set
	r      *reloader
	logs   *testserve.Buffer
}

const fixtureConfig = `listen: 127.0.0.1:0
adminListen: 127.0.0.1:0
seatsDir: seats
policy:
  gates:
    - gate: impidMatch
    - {gate: listFile, options: {file: lists/allow.txt}}
    - {gate: bidSanity, options: {maxPrice: %s}}
`

func fixtureYAML(maxPrice string) string { return strings.Replace(fixtureConfig, "%s", maxPrice, 1) }

func newReloadFixture(t *testing.T) *reloadFixture {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "seats"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lists"), 0o755))
	writeAtomic(t, filepath.Join(dir, "lists", "allow.txt"), "a.com\n")
	writeAtomic(t, filepath.Join(dir, "bidguard.yaml"), fixtureYAML("10"))
	fx := &reloadFixture{t: t, dir: dir, set: metrics.NewSet(), logs: &testserve.Buffer{}}
	path := filepath.Join(dir, "bidguard.yaml")
	load := func() (*engine.Snapshot, error) {
		cfg, data, err := config.LoadFile(path)
		if err != nil {
			return nil, err
		}
		return engine.Compile(cfg, path, data, testRegistry())
	}
	snap, err := load()
	require.NoError(t, err)
	fx.holder.Store(snap)
	m := newReloadMeters(fx.set)
	m.ok.Set(1)
	log := slog.New(slog.NewTextHandler(fx.logs, nil))
	fx.r = newReloader(path, snap, load, func(*engine.Snapshot) error { return nil }, &fx.holder, log, m)
	return fx
}

func (fx *reloadFixture) path(p string) string { return filepath.Join(fx.dir, p) }

// poll runs one poll and returns the counters: success, error, restart_required, gauge.
func (fx *reloadFixture) poll() [4]float64 {
	fx.r.check("poll", false)
	return fx.counts()
}

// pollStable runs two polls after a change: the first sees the change and
// must not reload (the content has not been stable over two polls yet); the
// second reloads. It returns the counters after the second.
func (fx *reloadFixture) pollStable() [4]float64 {
	fx.t.Helper()
	before := fx.counts()
	require.Equal(fx.t, before, fx.poll(), "a change is loaded only once stable over two polls")
	return fx.poll()
}

func (fx *reloadFixture) counts() [4]float64 {
	m := fx.r.m
	return [4]float64{float64(m.results[reloadSuccess].Get()), float64(m.results[reloadError].Get()),
		float64(m.results[reloadRestartRequired].Get()), m.ok.Get()}
}

func TestReloaderNoChangeNoReload(t *testing.T) {
	fx := newReloadFixture(t)
	v := fx.holder.Load().Version
	for range 3 {
		require.Equal(t, [4]float64{0, 0, 0, 1}, fx.poll())
	}
	// Touching a file or rewriting the same bytes is not a change.
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(fx.path("bidguard.yaml"), future, future))
	writeAtomic(t, fx.path("lists/allow.txt"), "a.com\n")
	require.Equal(t, [4]float64{0, 0, 0, 1}, fx.poll())
	require.Equal(t, v, fx.holder.Load().Version)
	require.Empty(t, fx.logs.String())
}

func TestReloaderOptionFile(t *testing.T) {
	fx := newReloadFixture(t)
	v := fx.holder.Load().Version
	require.Contains(t, fx.holder.Load().Files, fx.path("lists/allow.txt"))
	writeAtomic(t, fx.path("lists/allow.txt"), "a.com\nb.com\n")
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.pollStable())
	require.NotEqual(t, v, fx.holder.Load().Version)
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.poll(), "the same change is not reloaded twice")

	// A write of the same size within the same mtime is still seen: recent
	// files are hashed on every poll.
	st, err := os.Stat(fx.path("lists/allow.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fx.path("lists/allow.txt"), []byte("a.com\nc.com\n"), 0o644))
	require.NoError(t, os.Chtimes(fx.path("lists/allow.txt"), st.ModTime(), st.ModTime()))
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.pollStable())

	// The option file disappearing breaks the config: the old one stays.
	v = fx.holder.Load().Version
	require.NoError(t, os.Remove(fx.path("lists/allow.txt")))
	require.Equal(t, [4]float64{2, 1, 0, 0}, fx.pollStable())
	require.Equal(t, v, fx.holder.Load().Version)
	writeAtomic(t, fx.path("lists/allow.txt"), "a.com\n")
	require.Equal(t, [4]float64{3, 1, 0, 1}, fx.pollStable())
}

func TestReloaderBrokenConfigOnce(t *testing.T) {
	fx := newReloadFixture(t)
	v := fx.holder.Load().Version
	writeAtomic(t, fx.path("bidguard.yaml"), fixtureYAML("10")+"    - gate: nope\n")
	require.Equal(t, [4]float64{0, 1, 0, 0}, fx.pollStable())
	for range 3 {
		require.Equal(t, [4]float64{0, 1, 0, 0}, fx.poll(), "counted and logged once per change")
	}
	require.Equal(t, v, fx.holder.Load().Version)
	require.Equal(t, 1, strings.Count(fx.logs.String(), "config reload failed"), fx.logs.String())
	require.Contains(t, fx.logs.String(), `unknown gate \"nope\"`)

	// SIGHUP retries even without a change.
	fx.r.check("SIGHUP", true)
	require.Equal(t, [4]float64{0, 2, 0, 0}, fx.counts())

	writeAtomic(t, fx.path("bidguard.yaml"), fixtureYAML("1"))
	require.Equal(t, [4]float64{1, 2, 0, 1}, fx.pollStable())
	require.NotEqual(t, v, fx.holder.Load().Version)
}

// TestReloaderHalfWritten: a config caught half-written, whose first half
// is a valid config of its own, is never loaded: only content stable over
// two polls is.
func TestReloaderHalfWritten(t *testing.T) {
	fx := newReloadFixture(t)
	v := fx.holder.Load().Version
	full := fixtureYAML("1")
	half := full[:strings.Index(full, "    - {gate: listFile")] // valid: policy with impidMatch only
	_, err := config.Parse(fx.path("half.yaml"), []byte(half))
	require.NoError(t, err, "the prefix is a valid config")

	// Written in place in two halves, each seen by one poll.
	require.NoError(t, os.WriteFile(fx.path("bidguard.yaml"), []byte(half), 0o644))
	require.Equal(t, [4]float64{0, 0, 0, 1}, fx.poll())
	require.Equal(t, v, fx.holder.Load().Version, "the half file is not loaded")
	f, err := os.OpenFile(fx.path("bidguard.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(full[len(half):])
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, [4]float64{0, 0, 0, 1}, fx.poll(), "changed again: still not stable")
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.poll(), "stable over two polls: loaded")
	require.Len(t, fx.holder.Load().Default.Gates, 3, "the whole file")

	// Changed and changed back between polls: nothing to load.
	require.NoError(t, os.WriteFile(fx.path("bidguard.yaml"), []byte(half), 0o644))
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.poll())
	require.NoError(t, os.WriteFile(fx.path("bidguard.yaml"), []byte(full), 0o644))
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.poll())
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.poll())

	// SIGHUP loads at once.
	writeAtomic(t, fx.path("bidguard.yaml"), fixtureYAML("2"))
	fx.r.check("SIGHUP", true)
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.counts())
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.poll(), "the change SIGHUP loaded is not loaded again")
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.poll())
}

// A reload that changes a restart-only key applies the rest of the file
// and keeps the key's running value; restart_required says so until the
// files give the running values again.
func TestReloaderRestartRequired(t *testing.T) {
	fx := newReloadFixture(t)
	v := fx.holder.Load().Version
	restart := func() float64 { return fx.r.m.restart.Get() }
	write := func(maxPrice, old, new string) {
		writeAtomic(t, fx.path("bidguard.yaml"), strings.Replace(fixtureYAML(maxPrice), old, new, 1))
	}
	write("1", "listen: 127.0.0.1:0", "listen: 127.0.0.1:1")
	require.Equal(t, [4]float64{0, 0, 1, 1}, fx.pollStable(), "applied, with a key kept: the gauge stays 1")
	snap := fx.holder.Load()
	require.NotEqual(t, v, snap.Version, "the rest of the file applies")
	require.Equal(t, "127.0.0.1:0", snap.Config.Listen, "listen keeps its running value")
	require.Equal(t, 1.0, restart())
	require.Contains(t, fx.logs.String(), "keys=[listen]")

	write("1", "seatsDir: seats", "seatsDir: seats\nlisten: 127.0.0.1:1\naudit: {fsyncEvery: 3}")
	fx.r.check("SIGHUP", true) // listen given twice: a decode error
	require.Equal(t, [4]float64{0, 1, 1, 0}, fx.counts())
	write("1", "adminListen: 127.0.0.1:0", "adminListen: 127.0.0.1:1\naudit: {fsyncEvery: 3}")
	require.Equal(t, [4]float64{0, 1, 2, 1}, fx.pollStable())
	require.Contains(t, fx.logs.String(), `keys="[adminListen audit.fsyncEvery]"`)
	require.Equal(t, 64, fx.holder.Load().Config.Audit.FsyncEvery)

	write("2", "", "")
	require.Equal(t, [4]float64{1, 1, 2, 1}, fx.pollStable(), "the running values again: nothing needs a restart")
	require.Zero(t, restart())
}

// A broken edit turns last_reload_successful to 0; reverting the files to
// the loaded content turns it back to 1 without a reload.
func TestReloaderRevertClearsGauge(t *testing.T) {
	fx := newReloadFixture(t)
	v := fx.holder.Load().Version
	writeAtomic(t, fx.path("bidguard.yaml"), fixtureYAML("-1"))
	require.Equal(t, [4]float64{0, 1, 0, 0}, fx.pollStable())
	writeAtomic(t, fx.path("bidguard.yaml"), fixtureYAML("10"))
	require.Equal(t, [4]float64{0, 1, 0, 1}, fx.pollStable(), "the files are what is loaded")
	require.Equal(t, v, fx.holder.Load().Version)
	require.Contains(t, fx.logs.String(), "config files are back to the loaded content")
	require.Equal(t, [4]float64{0, 1, 0, 1}, fx.poll())
}

func TestReloaderSeatsDir(t *testing.T) {
	fx := newReloadFixture(t)
	require.Nil(t, fx.holder.Load().Seats["s1"])
	seat := fx.path("seats/s1.yaml")
	// replaceGates: an inherited listFile would resolve its file against
	// the seat file's directory (engine behaviour, see compileSeat).
	writeAtomic(t, seat, "seat: s1\nreplaceGates: true\ngates: [{gate: bidSanity, options: {maxPrice: 1}}]\n")
	require.NoError(t, os.WriteFile(fx.path("seats/notes.txt"), []byte("not a seat file"), 0o644))
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.pollStable(), fx.logs.String())
	require.NotNil(t, fx.holder.Load().Seats["s1"])
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.poll())

	require.NoError(t, os.Remove(seat))
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.pollStable(), "a deleted seat file is a valid change")
	require.Nil(t, fx.holder.Load().Seats["s1"])
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.poll())

	// Files that are not seat files are not watched.
	require.NoError(t, os.WriteFile(fx.path("seats/notes.txt"), []byte("changed"), 0o644))
	require.Equal(t, [4]float64{2, 0, 0, 1}, fx.poll())
}

// TestReloaderRunStops checks the loop polls on its own and returns on
// cancellation.
func TestReloaderRunStops(t *testing.T) {
	fx := newReloadFixture(t)
	writeAtomic(t, fx.path("bidguard.yaml"), "reloadPollMs: 5\n"+fixtureYAML("10"))
	require.Equal(t, [4]float64{1, 0, 0, 1}, fx.pollStable())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	hup := make(chan os.Signal, 1)
	go func() {
		defer close(done)
		fx.r.run(ctx, hup)
	}()
	writeAtomic(t, fx.path("bidguard.yaml"), "reloadPollMs: 5\n"+fixtureYAML("2"))
	require.Eventually(t, func() bool { return fx.r.m.results[reloadSuccess].Get() == 2 }, 10*time.Second, 5*time.Millisecond)
	hup <- os.Interrupt // any value: the loop reloads, unchanged
	require.Eventually(t, func() bool { return fx.r.m.results[reloadSuccess].Get() == 3 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reload loop did not stop")
	}
}
