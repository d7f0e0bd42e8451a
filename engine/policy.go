package engine

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bidguard/bidguard/config"
)

// Mode is a gate entry's mode.
type Mode uint8

const (
	// Enforce rejects on a hit (the default).
	Enforce Mode = iota
	// Warn reports and counts a hit but rejects nothing.
	Warn
	// Off lists the gate as skipped and never runs it.
	Off
)

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "enforce"
}

var modeNames = [...]string{Enforce: "enforce", Warn: "warn", Off: "off"}

func parseMode(s string) (Mode, bool) {
	switch s {
	case "", "enforce":
		return Enforce, true
	case "warn":
		return Warn, true
	case "off":
		return Off, true
	}
	return 0, false
}

// GateEntry is one compiled gate of a policy.
type GateEntry struct {
	// Name is the result name ("rtb.bid-sanity", or the entry's name:).
	Name string
	// Factory is the factory name ("bidSanity").
	Factory string
	Mode    Mode
	Kind    Kind
	Gate    Gate
	// Options is the decoded options struct the gate was built from.
	Options any

	bid         BidGate
	resp        ResponseGate
	scan        ScanGate
	deadline    DeadlineGate
	judgesEmpty bool
	quarantine  bool               // the gate is a QuarantineGate
	src         *config.GateConfig // a default policy entry as configured: what a seat inherits
	// id is unique in the process (entryIDs): a gate list is keyed by
	// its entries' ids, and an entry outlives the snapshot that built it.
	// sum is what the snapshot's version hashes of it.
	id  uint64
	sum [32]byte
	// key and interned are the entry's key and gate in the intern table
	// (interned nil: built for this entry alone, shared with nothing).
	key      entryKey
	interned *internedGate
}

// Policy is a compiled policy: the default one or a seat's.
type Policy struct {
	// Key is "default" or the seat key.
	Key      string
	Shadow   bool
	FailFast bool
	Gates    []*GateEntry
	index    int
	// origin is the seat's config.SeatConfig.Origin (0: none); reusable
	// tells that every entry is interned and read no file, so that a
	// reload may take the policy as it is when the seat's origin and the
	// compilation's context are unchanged (compiler.reuse).
	origin   uint64
	reusable bool
	list     *gateList // Gates interned (nil: none, the default policy)
	// results is the default policy's template: its gates' results
	// before a run (initialResults), which a run copies in one go
	// (Eval.results). Nil for a seat policy.
	results []GateResult
}

// Snapshot is an immutable compiled configuration. Requests hold the
// snapshot they took on arrival; reload swaps in a new one atomically.
type Snapshot struct {
	// Config is the configuration compiled, its seats without their gate
	// entries (addGates, gateOptions, gates): Policies holds what they mean.
	Config *config.Config
	// Version is the first 12 hex digits of SHA-256 over the compiled snapshot.
	Version string
	// Default is the default policy; Seats the seat policies by key.
	Default *Policy
	Seats   map[string]*Policy
	// OnDeadlineForward is `onDeadline: forward`.
	OnDeadlineForward bool
	SeatNonBid        bool
	Rates             *Rates
	// Files are the files this snapshot was read from (config, seat files,
	// files named by gate options, upstream TLS and header files), for
	// reload polling.
	Files []string
	// Operator holds the operator-quarantined seats (quarantine.seats).
	Operator map[string]bool
	// Quarantine tells the quarantine gate which seats are quarantined:
	// after Compile, the seats of quarantine.seats (nil when none); serve
	// replaces it with the anomaly detector before the snapshot is shared.
	Quarantine SeatStates
	// Warnings are non-fatal remarks of `config validate`.
	Warnings []string

	policies  []*Policy
	qualified map[[2]string]*Policy
	intern    *internTable // the gates, entries and gate lists of the policies
	context   seatContext  // what every seat policy was compiled against
	reused    int          // seat policies taken whole from the previous snapshot
}

// Policies lists the default policy then the seat policies by key.
func (s *Snapshot) Policies() []*Policy { return s.policies }

// PolicyFor resolves a bid's policy: "<upstream>/<seat>", then "<seat>",
// then the default policy.
func (s *Snapshot) PolicyFor(upstream, seat string) *Policy {
	if len(s.Seats) == 0 {
		return s.Default
	}
	if upstream != "" && len(s.qualified) > 0 {
		if p, ok := s.qualified[[2]string{upstream, seat}]; ok {
			return p
		}
	}
	if p, ok := s.Seats[seat]; ok {
		return p
	}
	return s.Default
}

// Compile builds a snapshot from a parsed config. name is the config file's
// path (or a label for the embedded config); data its bytes, hashed into the
// version. Every error of the compilation is returned together.
func Compile(cfg *config.Config, name string, data []byte, reg Registry) (*Snapshot, error) {
	return CompileFrom(nil, cfg, name, data, reg)
}

// CompileFrom is Compile reusing the gate instances of prev, the snapshot in
// use (nil: none), whose options are unchanged (intern.go): a reload builds
// only what changed. prev must have been compiled with the same registry; it
// is only read, and the new snapshot keeps no reference to it.
func CompileFrom(prev *Snapshot, cfg *config.Config, name string, data []byte, reg Registry) (*Snapshot, error) {
	s := &Snapshot{
		Config:            cfg,
		Seats:             make(map[string]*Policy, len(cfg.Seats)),
		OnDeadlineForward: cfg.Policy.OnDeadline == "forward",
		SeatNonBid:        cfg.Policy.SeatNonBid,
		Operator:          map[string]bool{},
	}
	for _, q := range cfg.Quarantine.Seats {
		s.Operator[q] = true
	}
	s.Quarantine = operatorStates(cfg)
	var errs []error
	rates, err := CompileRates(cfg.Policy.CurrencyRates)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: policy.%w", name, err))
	}
	s.Rates = rates
	c := &compiler{reg: reg, name: name, dir: filepath.Dir(name), seen: map[string]bool{}}
	if prev != nil {
		c.prev = prev.intern
	}
	c.cur = newInternTable(c.prev)

	failFast := cfg.Policy.FailFast == nil || *cfg.Policy.FailFast
	def := &Policy{Key: "default", Shadow: cfg.Policy.Action == "shadow", FailFast: failFast}
	for i := range cfg.Policy.Gates {
		path := func() string { return fmt.Sprintf("policy.gates[%d]", i) }
		keys := keyPaths{options: func() string { return path() + ".options" }}
		e, err := c.entry(&cfg.Policy.Gates[i], nil, nil, name, path, keys, Env{Dir: c.dir})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.src = &cfg.Policy.Gates[i]
		def.Gates = append(def.Gates, e)
	}
	dup := checkNames(name, "policy", def.Gates)
	c.defNamesOK = len(dup) == 0
	errs = append(errs, dup...)
	errs = append(errs, checkGateReserve(name, cfg, def)...)
	if len(cfg.Policy.Gates) == 0 {
		s.Warnings = append(s.Warnings, "policy.gates is empty: every bid is forwarded unjudged")
	}
	def.results = initialResults(def)
	s.Default = def
	c.def = def
	s.context = seatContext{name: name, def: def.Gates, shadow: def.Shadow, failFast: def.FailFast, defNamesOK: c.defNamesOK}
	if prev != nil && prev.intern != nil && prev.context.equal(s.context) {
		c.prevSeats = prev.Seats
	}
	c.inherited = make([]*GateEntry, len(def.Gates))
	s.policies = make([]*Policy, 1, 1+len(cfg.Seats))
	s.policies[0] = def

	keys := make([]string, 0, len(cfg.Seats))
	for k := range cfg.Seats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i%yieldEvery == yieldEvery-1 {
			runtime.Gosched()
		}
		p := c.reuse(k, cfg.Seats[k])
		var perrs []error
		if p == nil {
			p, perrs = c.seat(k, cfg.Seats[k])
		} else {
			s.reused++
		}
		errs = append(errs, perrs...)
		if p != nil {
			p.index = len(s.policies)
			s.Seats[k] = p
			if up, seat, ok := strings.Cut(k, "/"); ok {
				if s.qualified == nil {
					s.qualified = map[[2]string]*Policy{}
				}
				s.qualified[[2]string{up, seat}] = p
			}
			s.policies = append(s.policies, p)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s.intern = c.cur
	s.Config = kept(cfg)
	s.Files = append([]string{name}, cfg.SeatFiles(name)...)
	s.Files = append(s.Files, c.files...)
	s.Version = s.hash(data)
	// Upstream TLS and header files are watched but not hashed: they hold
	// keys and secrets, and the version is sent to the exchange.
	s.Files = append(s.Files, cfg.UpstreamFiles()...)
	return s, nil
}

// kept returns the configuration a snapshot keeps: cfg with its seats' gate
// entries (addGates, gateOptions, gates) left out, since their option blocks
// are parsed YAML, several times what the compiled policies hold of them
// (about 1 KB per seat that overrides one option). cfg itself is unchanged.
func kept(cfg *config.Config) *config.Config {
	if len(cfg.Seats) == 0 {
		return cfg
	}
	c := *cfg
	c.Seats = make(config.SeatConfigs, len(cfg.Seats))
	for k, sc := range cfg.Seats {
		sc.AddGates, sc.GateOptions, sc.Gates = nil, nil, nil
		c.Seats[k] = sc
	}
	return &c
}

// compiler is the state of one compilation.
type compiler struct {
	reg  Registry
	name string // the config file
	dir  string // its directory
	def  *Policy
	// cur is the new snapshot's intern table; prev the previous one's (nil
	// when none), only read.
	cur, prev *internTable
	// inherited holds, by index in def.Gates, the entry a seat inherits
	// unchanged, once one seat has built it.
	inherited []*GateEntry
	// decoded holds, by index in def.Gates, the options a seat's
	// override is decoded over (pristine).
	decoded []any
	// defNamesOK: the default policy's result names are distinct, so
	// are those a seat inherits.
	defNamesOK bool
	// prevSeats are the previous snapshot's seat policies when they were
	// compiled in the same context (nil otherwise): reuse takes them.
	prevSeats map[string]*Policy
	files     []string // the files gates read, each once
	seen      map[string]bool
	keyBuf    []byte
	listBuf   []*GateEntry
}

// watch registers a file a gate read, for reload polling.
func (c *compiler) watch(path string) {
	if !c.seen[path] {
		c.seen[path] = true
		c.files = append(c.files, path)
	}
}

// checkGateReserve enforces gateReserveMs >= the largest tmaxGuard bufferMs
// + 1, globally and in every upstream's deadline override.
func checkGateReserve(name string, cfg *config.Config, def *Policy) []error {
	buf := -1.0
	for _, e := range def.Gates {
		if b, ok := e.Gate.(DeadlineBuffer); ok && e.Mode != Off && b.BufferMs() > buf {
			buf = b.BufferMs()
		}
	}
	if buf < 0 {
		return nil
	}
	var errs []error
	check := func(path string, reserve int) {
		if float64(reserve) < buf+1 {
			errs = append(errs, fmt.Errorf("%s: %s.gateReserveMs: %d must be at least tmaxGuard bufferMs + 1 (%g)", name, path, reserve, buf+1))
		}
	}
	check("deadline", cfg.Deadline.GateReserveMs)
	for i, u := range cfg.Upstreams {
		if u.Deadline.GateReserveMs != nil {
			check(fmt.Sprintf("upstreams[%d].deadline", i), *u.Deadline.GateReserveMs)
		}
	}
	return errs
}

// seat compiles the seat policy key. Only what the seat changes is built:
// an inherited gate it does not override is the entry every such seat
// shares, and a gate list equal to another seat's is that seat's.
func (c *compiler) seat(key string, sc config.SeatConfig) (*Policy, []error) {
	sc, err := sc.WithGates()
	if err != nil {
		return nil, []error{err}
	}
	def := c.def
	where := func() string { return fmt.Sprintf("seat %q", key) }
	file := sc.File()
	p := &Policy{Key: key, Shadow: def.Shadow, FailFast: def.FailFast}
	switch sc.Action {
	case "enforce":
		p.Shadow = false
	case "shadow":
		p.Shadow = true
	}
	if sc.FailFast != nil {
		p.FailFast = *sc.FailFast
	}
	env := Env{Dir: filepath.Dir(file), InSeat: true}
	// The key paths of the seat's blocks, for type errors: under
	// seats.<key> in the config file, at the top of a seat file.
	prefix := "seats." + key + "."
	if sc.Seat != "" { // a seat file of seatsDir
		prefix = ""
	}
	overPath := func(name string) func() string {
		return func() string { return prefix + "gateOptions." + name + ".options" }
	}
	var errs []error
	var used map[string]bool
	if len(sc.GateOptions) > 0 {
		used = make(map[string]bool, len(sc.GateOptions))
		if sc.ReplaceGates {
			for _, gc := range sc.Gates {
				if n := resultName(c.reg, gc); hasOverride(sc, n) {
					used[n] = true
				}
			}
		} else {
			for _, e := range def.Gates {
				if e.Kind != Response && e.Kind != Guard && hasOverride(sc, e.Name) {
					used[e.Name] = true
				}
			}
		}
		if len(used) < len(sc.GateOptions) {
			names := make([]string, 0, len(sc.GateOptions))
			for n := range sc.GateOptions {
				if !used[n] {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			for _, n := range names {
				errs = append(errs, fmt.Errorf("%s: %s: gateOptions names %q, which the seat does not inherit", file, where(), n))
			}
		}
	}
	gates := c.listBuf[:0]
	add := func(gc *config.GateConfig, over *config.GateOverride, inherited any, path func() string, keys keyPaths, env Env) {
		e, err := c.entry(gc, over, inherited, file, path, keys, env)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if e.Kind == Response || e.Kind == Guard {
			errs = append(errs, fmt.Errorf("%s:%d: %s: %s is a response gate; it belongs to the default policy only", file, gc.Line(), path(), gc.Gate))
			return
		}
		gates = append(gates, e)
	}
	override := func(name string) *config.GateOverride {
		if !hasOverride(sc, name) {
			return nil
		}
		o := sc.GateOptions[name]
		return &o
	}
	if sc.ReplaceGates {
		for i := range sc.Gates {
			gc := &sc.Gates[i]
			n := resultName(c.reg, *gc)
			keys := keyPaths{options: func() string { return fmt.Sprintf("%sgates[%d].options", prefix, i) }, over: overPath(n)}
			add(gc, override(n), nil, func() string { return fmt.Sprintf("%s: gates[%d]", where(), i) }, keys, env)
		}
	} else {
		inEnv := env
		inEnv.Dir = c.dir // relative paths of inherited options stay the main config's
		for i, e := range def.Gates {
			if e.Kind == Response || e.Kind == Guard {
				continue
			}
			path := func() string { return fmt.Sprintf("%s: inherited policy.gates[%d]", where(), i) }
			keys := keyPaths{options: func() string { return fmt.Sprintf("policy.gates[%d].options", i) }, over: overPath(e.Name)}
			if over := override(e.Name); over != nil {
				add(e.src, over, c.pristine(i), path, keys, inEnv)
				continue
			}
			if c.inherited[i] == nil {
				n := len(gates)
				add(e.src, nil, nil, path, keys, inEnv)
				if len(gates) > n {
					c.inherited[i] = gates[n]
				}
				continue
			}
			gates = append(gates, c.inherited[i])
		}
	}
	for i := range sc.AddGates {
		keys := keyPaths{options: func() string { return fmt.Sprintf("%saddGates[%d].options", prefix, i) }}
		add(&sc.AddGates[i], nil, nil, func() string { return fmt.Sprintf("%s: addGates[%d]", where(), i) }, keys, env)
	}
	c.listBuf = gates[:0]
	if sc.ReplaceGates || len(sc.AddGates) > 0 || !c.defNamesOK {
		// Inherited entries keep the default policy's names.
		errs = append(errs, checkNames(file, where(), gates)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if p.list = c.list(gates); p.list != nil {
		p.Gates = p.list.gates
	}
	p.origin = sc.Origin()
	p.reusable = true
	for _, e := range p.Gates {
		if e.interned == nil || e.interned.watched {
			p.reusable = false
		}
	}
	return p, nil
}

// hasOverride reports whether the seat's gateOptions name the gate name.
func hasOverride(sc config.SeatConfig, name string) bool {
	_, ok := sc.GateOptions[name]
	return ok
}

// pristine returns the options of the default policy's gate i as decoded
// from the config, before its constructor saw them (it may normalise
// them), once per compilation; nil when they cannot be copied.
func (c *compiler) pristine(i int) any {
	if c.decoded == nil {
		c.decoded = make([]any, len(c.def.Gates))
	}
	if c.decoded[i] == nil {
		e := c.def.Gates[i]
		f := c.reg[e.Factory]
		if f.Options == nil {
			return nil
		}
		opts := f.Options()
		if err := config.DecodeOptions(c.name, func() string { return "" }, &e.src.Options, opts); err != nil {
			return nil
		}
		if _, ok := cloneOptions(opts); !ok {
			return nil
		}
		c.decoded[i] = opts
	}
	return c.decoded[i]
}

// list returns the interned copy of a seat's gate list (nil: empty).
func (c *compiler) list(gates []*GateEntry) *gateList {
	if len(gates) == 0 {
		return nil
	}
	c.keyBuf = listKey(c.keyBuf, gates)
	if l, ok := c.cur.lists[string(c.keyBuf)]; ok {
		return l
	}
	if c.prev != nil {
		if l, ok := c.prev.lists[string(c.keyBuf)]; ok {
			c.cur.lists[string(c.keyBuf)] = l
			return l
		}
	}
	l := newGateList(slices.Clone(gates))
	c.cur.lists[string(c.keyBuf)] = l
	return l
}

func resultName(reg Registry, gc config.GateConfig) string {
	if gc.Name != "" {
		return gc.Name
	}
	if f, ok := reg[gc.Gate]; ok {
		return f.ResultName
	}
	return gc.Gate
}

func checkNames(file, where string, gates []*GateEntry) []error {
	var errs []error
	seen := map[string]bool{}
	for _, e := range gates {
		if seen[e.Name] {
			errs = append(errs, fmt.Errorf("%s: %s: two gates have the result name %q", file, where, e.Name))
		}
		seen[e.Name] = true
	}
	return errs
}

// optionsError places an options block's error: a wrong type names its
// own file, line and key path; anything else is prefixed with the entry.
func optionsError(loc func() string, block string, err error) error {
	if ke := (*config.KeyError)(nil); errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%s: %s: %w", loc(), block, err)
}

// keyPaths return the key paths of an entry's options block and of its
// seat's gateOptions override, for type errors (built only then).
type keyPaths struct{ options, over func() string }

// entry compiles one gate entry of file (path names it in errors, built only
// on an error), with a seat's override when over is not nil. Its gate is the
// interned instance of its key when there is one, built otherwise; the entry
// is the interned one of its gate, name and mode.
//
// inherited, when not nil, is gc's options as decoded for the default
// policy: the override is decoded into a copy of them instead of decoding
// gc's options again.
func (c *compiler) entry(gc *config.GateConfig, over *config.GateOverride, inherited any, file string, path func() string, keys keyPaths, env Env) (*GateEntry, error) {
	loc := func() string { return fmt.Sprintf("%s:%d: %s", file, gc.Line(), path()) }
	f, ok := c.reg[gc.Gate]
	if gc.Gate == "" {
		return nil, fmt.Errorf("%s: gate: missing", loc())
	}
	if !ok {
		return nil, fmt.Errorf("%s: unknown gate %q", loc(), gc.Gate)
	}
	gloc := func() string { return fmt.Sprintf("%s (%s)", loc(), gc.Gate) }
	modeStr := gc.Mode
	if over != nil && over.Mode != "" {
		modeStr = over.Mode
	}
	mode, ok := parseMode(modeStr)
	if !ok {
		return nil, fmt.Errorf("%s: mode: %q is not enforce, warn or off", gloc(), modeStr)
	}
	if f.Kind == Guard && mode == Warn {
		return nil, fmt.Errorf("%s: mode: %s accepts only enforce and off", gloc(), gc.Gate)
	}
	var opts any
	if f.Options != nil {
		if inherited != nil {
			opts, _ = cloneOptions(inherited)
		}
		if opts == nil {
			opts = f.Options()
			if err := config.DecodeOptions(file, keys.options, &gc.Options, opts); err != nil {
				return nil, optionsError(gloc, "options", err)
			}
		}
		if over != nil {
			if err := config.DecodeOptions(file, keys.over, &over.Options, opts); err != nil {
				return nil, optionsError(gloc, "gateOptions", err)
			}
		}
	} else if config.HasOptions(&gc.Options) || (over != nil && config.HasOptions(&over.Options)) {
		return nil, fmt.Errorf("%s: %s takes no options", gloc(), gc.Gate)
	}
	var key gateKey
	var version [32]byte
	var interned bool
	c.keyBuf, key, version, interned = gateKeyOf(c.keyBuf, f.Name, env, opts)
	ig := c.cur.gates[key]
	if ig == nil && c.prev != nil {
		if old := c.prev.gates[key]; old != nil && !old.watched {
			ig = old
			c.cur.gates[key] = ig
		}
	}
	if ig == nil || !interned {
		g, watched, err := c.build(f, opts, env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gloc(), err)
		}
		ig = &internedGate{gate: g, opts: opts, version: version, watched: watched}
		if interned {
			c.cur.gates[key] = ig
		}
	}
	name := f.ResultName
	if gc.Name != "" {
		name = gc.Name
	}
	ek := entryKey{gate: key, name: name, mode: mode}
	if interned {
		if e := c.cur.entries[ek]; e != nil {
			return e, nil
		}
		if c.prev != nil {
			if e := c.prev.entries[ek]; e != nil && e.interned == ig {
				c.cur.entries[ek] = e
				return e, nil
			}
		}
	}
	e := &GateEntry{Name: name, Factory: f.Name, Mode: mode, Kind: f.Kind, Gate: ig.gate, Options: ig.opts,
		id: entryIDs.Add(1), sum: entrySum(ig.version, name, mode)}
	if interned {
		e.key, e.interned = ek, ig
	}
	g := ig.gate
	_, e.quarantine = g.(QuarantineGate)
	switch f.Kind {
	case PerBid:
		e.bid, ok = g.(BidGate)
	case Response:
		e.resp, ok = g.(ResponseGate)
	case Scan:
		e.scan, ok = g.(ScanGate)
	case Guard:
		e.deadline, ok = g.(DeadlineGate)
	}
	if !ok {
		return nil, fmt.Errorf("%s: gate does not implement its kind's interface", gloc())
	}
	if ej, isEJ := g.(EmptyJudge); isEJ {
		e.judgesEmpty = ej.JudgesEmpty()
	}
	if interned {
		c.cur.entries[ek] = e
	}
	return e, nil
}

// build runs the factory's constructor; watched reports whether it read a
// file.
func (c *compiler) build(f Factory, opts any, env Env) (g Gate, watched bool, err error) {
	env.Watch = func(path string) {
		watched = true
		c.watch(path)
	}
	g, err = f.New(opts, env)
	if err != nil {
		return nil, watched, err
	}
	if g.Kind() != f.Kind {
		return nil, watched, fmt.Errorf("gate kind %s does not match its factory's %s", g.Kind(), f.Kind)
	}
	return g, watched, nil
}

func (s *Snapshot) hash(data []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "config %d\n", len(data))
	h.Write(data)
	for _, f := range s.Files[1:] {
		b, ok := s.Config.SeatFileBytes(f) // what was compiled
		if !ok {
			b, _ = os.ReadFile(f)
		}
		fmt.Fprintf(h, "file %s %d\n", f, len(b))
		h.Write(b)
	}
	var line []byte
	for _, p := range s.policies {
		line = append(line[:0], "policy "...)
		line = appendString(line, p.Key)
		line = strconv.AppendBool(append(line, " shadow="...), p.Shadow)
		line = strconv.AppendBool(append(line, " failFast="...), p.FailFast)
		line = strconv.AppendInt(append(line, " gates="...), int64(len(p.Gates)), 10)
		h.Write(append(line, '\n'))
		if p.list != nil {
			h.Write(p.list.sum[:]) // its entries' sums, taken once per list
			continue
		}
		for _, e := range p.Gates {
			h.Write(e.sum[:]) // its gate's key (factory, options), name and mode
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Describe lists each policy's effective gates, for `config validate`.
func (s *Snapshot) Describe() string {
	var b strings.Builder
	size := 0
	for _, p := range s.policies {
		size += len(p.Key) + 40 + 72*len(p.Gates)
	}
	b.Grow(size)
	_ = s.DescribeTo(&b) // a strings.Builder does not fail
	return b.String()
}

// DescribeTo writes Describe's text to w as it goes: a config of 100,000
// seats describes itself in 150 MB. Each entry's line is formatted once,
// however many seats share it.
func (s *Snapshot) DescribeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	lines := map[*GateEntry]string{}
	var num []byte
	for _, p := range s.policies {
		action := "enforce"
		if p.Shadow {
			action = "shadow"
		}
		bw.WriteString(p.Key + " (action " + action + ", failFast " + strconv.FormatBool(p.FailFast) + "):\n")
		if len(p.Gates) == 0 {
			bw.WriteString("  (no gates)\n")
		}
		for i, e := range p.Gates {
			line, ok := lines[e]
			if !ok {
				line = fmt.Sprintf(" %-26s %-16s %-8s %s\n", e.Name, e.Factory, e.Mode, e.Kind)
				lines[e] = line
			}
			num = append(num[:0], "   "...) // "  %2d."
			if i+1 >= 10 {
				num = num[:2]
			}
			num = append(strconv.AppendInt(num, int64(i+1), 10), '.')
			bw.Write(num)
			bw.WriteString(line)
		}
	}
	return bw.Flush()
}

// yieldEvery is how many seats a compilation compiles between two yields
// of its goroutine: a reload of 10,000 seats runs beside the bid path's
// goroutines on few cores.
const yieldEvery = 64
