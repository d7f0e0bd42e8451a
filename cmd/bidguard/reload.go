package main

// Hot reload of `serve`'s configuration (docs/design.md "Reload"): poll the files the current snapshot was read from and the
// seat files of its seatsDir every reloadPollMs, reload on SIGHUP, build and
// validate the whole new snapshot, swap it atomically, keep the old one on
// any error, and count the outcome. A restart-only key (listen, audit.*)
// that changed keeps its running value while the rest of the file applies.
//
// A poll reloads only files whose content was stable over two polls: a
// change seen by one poll is loaded by the next one if nothing changed in
// between, so a file caught half-written (a valid prefix of the new file)
// is never loaded. SIGHUP reloads at once: the operator sends it once the
// write is done.

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/bidguard/bidguard/engine"
)

// racyWindow is how long after its modification time a file's content is
// hashed again on every poll even when its size and mtime look unchanged:
// a write within the filesystem's timestamp granularity (up to 2 s on some)
// can leave both as they were.
const racyWindow = 2 * time.Second

// Reload results, the values of bidguard_config_reloads_total{result}.
const (
	reloadSuccess         = "success"
	reloadError           = "error"
	reloadRestartRequired = "restart_required"
)

// reloadMeters are bidguard_config_reloads_total{result},
// bidguard_config_last_reload_successful (1: the files on disk are what is
// loaded, or were loaded as far as a reload can load them) and
// bidguard_config_restart_required (1: the loaded files change a key that
// keeps its running value until a restart), registered up front in the set
// the admin listener serves.
type reloadMeters struct {
	results map[string]*metrics.Counter
	ok      *metrics.Gauge
	restart *metrics.Gauge
}

func newReloadMeters(set *metrics.Set) *reloadMeters {
	m := &reloadMeters{results: map[string]*metrics.Counter{}}
	for _, r := range []string{reloadSuccess, reloadError, reloadRestartRequired} {
		m.results[r] = set.GetOrCreateCounter(`bidguard_config_reloads_total{result="` + r + `"}`)
	}
	m.ok = set.GetOrCreateGauge("bidguard_config_last_reload_successful", nil)
	m.restart = set.GetOrCreateGauge("bidguard_config_restart_required", nil)
	return m
}

// count counts a reload: one that applied (restart-only keys kept or not)
// was successful, an error was not.
func (m *reloadMeters) count(result string) {
	m.results[result].Inc()
	if result == reloadError {
		m.ok.Set(0)
	} else {
		m.ok.Set(1)
	}
}

// fileState is what the last poll saw of one watched file.
type fileState struct {
	exists     bool
	unreadable bool
	size       int64
	mtime      time.Time
	sum        [sha256.Size]byte
	hashedAt   time.Time // when sum was taken (before reading)
}

// same reports whether two states hold the same content. Size and mtime
// alone never make a change: touching a file does not reload.
func (a fileState) same(b fileState) bool {
	return a.exists == b.exists && a.unreadable == b.unreadable && a.sum == b.sum
}

// reloader owns the reload loop of one `serve`. It is used by one goroutine
// (run); the Holder and the Server it swaps snapshots into are shared.
type reloader struct {
	path    string                           // --config; "" is the embedded config, which is not polled
	load    func() (*engine.Snapshot, error) // loads, compiles and applies the flag overrides
	install func(*engine.Snapshot) error     // rtb.Server.Install
	holder  *engine.Holder
	log     *slog.Logger
	m       *reloadMeters
	// onLoad, when set, is told of each snapshot swapped in and what
	// triggered its load ("poll", "SIGHUP"): the audit log's config record.
	onLoad func(snap *engine.Snapshot, trigger string)

	watched  []string             // the current snapshot's files, except the embedded config
	seatsDir string               // its seatsDir resolved against the config's directory, "" when none
	known    map[string]fileState // as the last scan saw them
	loaded   map[string]fileState // as they were when the snapshot in use was loaded
	pending  bool                 // the last scan saw a change: reload if the next sees none
}

// newReloader watches the files of snap, the snapshot the holder holds.
func newReloader(path string, snap *engine.Snapshot, load func() (*engine.Snapshot, error),
	install func(*engine.Snapshot) error, holder *engine.Holder, log *slog.Logger, m *reloadMeters) *reloader {
	r := &reloader{path: path, load: load, install: install, holder: holder, log: log, m: m, known: map[string]fileState{}}
	r.watch(snap)
	return r
}

// run polls every reloadPollMs of the current snapshot and reloads on each
// value received from hup, until ctx is done.
func (r *reloader) run(ctx context.Context, hup <-chan os.Signal) {
	t := time.NewTimer(r.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.check("SIGHUP", true)
		case <-t.C:
			r.check("poll", false)
		}
		t.Reset(r.interval())
	}
}

func (r *reloader) interval() time.Duration {
	if ms := r.holder.Load().Config.ReloadPollMs; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return time.Second
}

// check scans the watched files. A poll reloads when the last scan saw a
// change and this one sees none (the content was stable over two polls) and
// the files differ from what the snapshot in use was loaded from; when
// force (SIGHUP), it reloads at once if they differ. A change is tried
// once: a broken config is reported once, then again only when a file
// changes anew or on SIGHUP.
func (r *reloader) check(trigger string, force bool) {
	cur := r.scan()
	changed := diffStates(r.known, cur)
	r.known = cur
	if !force {
		if len(changed) > 0 || !r.pending {
			r.pending = len(changed) > 0 // wait for the content to settle
			return
		}
		r.pending = false
		changed = diffStates(r.loaded, cur)
		if len(changed) == 0 {
			// Changed and changed back: the files are what is loaded, so
			// a failed reload of the change in between no longer counts.
			if r.m.ok.Get() == 0 {
				r.m.ok.Set(1)
				r.log.Info("config files are back to the loaded content", "config", r.holder.Load().Version)
			}
			return
		}
	}
	r.pending = false
	log := r.log.With("trigger", trigger, "changed", changed)
	if force && len(diffStates(r.loaded, cur)) == 0 {
		// Every file is as the snapshot in use read it: a new load would
		// compile the same policies to the same Version (it hashes these
		// files and the options decoded from them), so none is made.
		r.m.count(reloadSuccess)
		log.Info("config reloaded: unchanged", "config", r.holder.Load().Version)
		return
	}
	r.reload(log, trigger)
}

// reload builds the new snapshot and swaps it in, or keeps the old one.
func (r *reloader) reload(log *slog.Logger, trigger string) {
	old := r.holder.Load()
	var snap *engine.Snapshot
	var err error
	atLowPriority(func() { snap, err = r.load() })
	if err != nil {
		r.m.count(reloadError)
		log.Error("config reload failed; the old config stays", "config", old.Version, "error", err)
		return
	}
	// old holds the running values of the restart-only keys: every
	// snapshot swapped in kept them.
	keys := snap.Config.KeepRestartKeys(old.Config)
	if err := r.install(snap); err != nil {
		r.m.count(reloadError)
		log.Error("config reload failed; the old config stays", "config", old.Version, "error", err)
		return
	}
	r.holder.Store(snap)
	r.watch(snap)
	if len(keys) > 0 {
		r.m.count(reloadRestartRequired)
		r.m.restart.Set(1)
		log.Warn("config reloaded but for keys that take effect only on restart: they keep their running value",
			"keys", keys, "config", snap.Version, "previous", old.Version)
	} else {
		r.m.count(reloadSuccess)
		r.m.restart.Set(0)
		log.Info("config reloaded", "config", snap.Version, "previous", old.Version)
	}
	if r.onLoad != nil {
		r.onLoad(snap, trigger)
	}
	atLowPriority(releaseLoadGarbage)
}

// releaseLoadGarbage returns the memory of a load to the OS at once: parsing
// a config allocates several times what its snapshot keeps (a 10,000-seat
// file: about 50 MB for 18 MB kept), and a reload leaves the old snapshot
// behind; left to the scavenger, RSS stays up for minutes and grows over a
// few reloads. It costs one collection, off the request path.
func releaseLoadGarbage() { debug.FreeOSMemory() }

// watch makes snap's files the watched set. Files watched before keep the
// state seen before the load, so a write during the load is still seen as a
// change at the next poll; new files are scanned now.
func (r *reloader) watch(snap *engine.Snapshot) {
	r.watched = snap.Files
	if r.path == "" && len(r.watched) > 0 {
		r.watched = r.watched[1:] // the embedded config is not a file
	}
	r.seatsDir = ""
	if d := snap.Config.SeatsDir; d != "" && r.path != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(r.path), d)
		}
		r.seatsDir = d
	}
	known := map[string]fileState{}
	now := time.Now()
	for _, p := range r.paths() {
		if st, ok := r.known[p]; ok {
			known[p] = st
		} else {
			known[p] = r.stat(p, now)
		}
	}
	r.known = known
	r.loaded = known // never mutated: scans build new maps
}

// paths lists the watched files and the seat files seatsDir holds now.
func (r *reloader) paths() []string {
	out := slices.Clone(r.watched)
	if r.seatsDir != "" {
		entries, _ := os.ReadDir(r.seatsDir) // a missing dir shows as its seat files disappearing
		for _, e := range entries {
			n := e.Name()
			if !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
				out = append(out, filepath.Join(r.seatsDir, n))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (r *reloader) scan() map[string]fileState {
	now := time.Now()
	cur := map[string]fileState{}
	for _, p := range r.paths() {
		cur[p] = r.stat(p, now)
	}
	return cur
}

// stat returns a file's state, hashing its content unless size and mtime
// are those of the last poll and the file was already settled then.
func (r *reloader) stat(path string, now time.Time) fileState {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return fileState{}
	}
	st := fileState{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	if old, ok := r.known[path]; ok && old.exists && !old.unreadable && old.size == st.size &&
		old.mtime.Equal(st.mtime) && old.hashedAt.Sub(old.mtime) > racyWindow {
		st.sum, st.hashedAt = old.sum, old.hashedAt
		return st
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// Out of descriptors: the file is not known to have changed.
		if old, ok := r.known[path]; ok {
			return old
		}
	}
	if err != nil {
		st.unreadable = true
		return st
	}
	st.sum, st.hashedAt = sha256.Sum256(data), now
	return st
}

// diffStates lists the files whose content differs between two scans,
// including files that appeared or disappeared.
func diffStates(before, after map[string]fileState) []string {
	var out []string
	for p, a := range after {
		if !before[p].same(a) {
			out = append(out, p)
		}
	}
	for p, b := range before {
		if _, ok := after[p]; !ok && b.exists {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
