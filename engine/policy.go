package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	switch m {
	case Warn:
		return "warn"
	case Off:
		return "off"
	}
	return "enforce"
}

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
	quarantine  bool              // the gate is a QuarantineGate
	src         config.GateConfig // the entry as configured, before seat overrides
}

// Policy is a compiled policy: the default one or a seat's.
type Policy struct {
	// Key is "default" or the seat key.
	Key      string
	Shadow   bool
	FailFast bool
	Gates    []*GateEntry
	index    int
}

// Snapshot is an immutable compiled configuration. Requests hold the
// snapshot they took on arrival; reload swaps in a new one atomically.
type Snapshot struct {
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
	s := &Snapshot{
		Config:            cfg,
		Seats:             map[string]*Policy{},
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
	dir := filepath.Dir(name)
	var files []string
	watch := func(p string) { files = append(files, p) }

	failFast := cfg.Policy.FailFast == nil || *cfg.Policy.FailFast
	def := &Policy{Key: "default", Shadow: cfg.Policy.Action == "shadow", FailFast: failFast}
	for i, gc := range cfg.Policy.Gates {
		path := fmt.Sprintf("policy.gates[%d]", i)
		e, err := buildEntry(reg, gc, nil, name, path, keyPaths{path + ".options", ""}, Env{Dir: dir, Watch: watch})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		def.Gates = append(def.Gates, e)
	}
	errs = append(errs, checkNames(name, "policy", def.Gates)...)
	errs = append(errs, checkGateReserve(name, cfg, def)...)
	if len(cfg.Policy.Gates) == 0 {
		s.Warnings = append(s.Warnings, "policy.gates is empty: every bid is forwarded unjudged")
	}
	s.Default = def
	s.policies = append(s.policies, def)

	keys := make([]string, 0, len(cfg.Seats))
	for k := range cfg.Seats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, perrs := compileSeat(reg, cfg, def, k, cfg.Seats[k], dir, watch)
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
	s.Files = append([]string{name}, cfg.SeatFiles(name)...)
	s.Files = append(s.Files, files...)
	s.Version = s.hash(data)
	// Upstream TLS and header files are watched but not hashed: they hold
	// keys and secrets, and the version is sent to the exchange.
	s.Files = append(s.Files, cfg.UpstreamFiles()...)
	return s, nil
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

func compileSeat(reg Registry, cfg *config.Config, def *Policy, key string, sc config.SeatConfig, mainDir string, watch func(string)) (*Policy, []error) {
	where := fmt.Sprintf("seat %q", key)
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
	env := Env{Dir: filepath.Dir(file), InSeat: true, Watch: watch}
	var errs []error
	type item struct {
		gc        config.GateConfig
		over      *config.GateOverride
		path      string
		keys      keyPaths
		inherited bool
	}
	// The key paths of the seat's blocks: under seats.<key> in the config
	// file, at the top of a seat file.
	prefix := "seats." + key + "."
	if sc.Seat != "" { // a seat file of seatsDir
		prefix = ""
	}
	var items []item
	if sc.ReplaceGates {
		for i, gc := range sc.Gates {
			items = append(items, item{gc: gc, path: fmt.Sprintf("%s: gates[%d]", where, i),
				keys: keyPaths{options: fmt.Sprintf("%sgates[%d].options", prefix, i)}})
		}
	} else {
		for i, e := range def.Gates {
			if e.Kind == Response || e.Kind == Guard {
				continue
			}
			items = append(items, item{gc: e.src, path: fmt.Sprintf("%s: inherited policy.gates[%d]", where, i), inherited: true,
				keys: keyPaths{options: fmt.Sprintf("policy.gates[%d].options", i)}})
		}
	}
	used := map[string]bool{}
	for i := range items {
		n := resultName(reg, items[i].gc)
		if o, ok := sc.GateOptions[n]; ok {
			o := o
			items[i].over = &o
			items[i].keys.over = prefix + "gateOptions." + n + ".options"
			used[n] = true
		}
	}
	names := make([]string, 0, len(sc.GateOptions))
	for n := range sc.GateOptions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !used[n] {
			errs = append(errs, fmt.Errorf("%s: %s: gateOptions names %q, which the seat does not inherit", file, where, n))
		}
	}
	for i, gc := range sc.AddGates {
		items = append(items, item{gc: gc, path: fmt.Sprintf("%s: addGates[%d]", where, i),
			keys: keyPaths{options: fmt.Sprintf("%saddGates[%d].options", prefix, i)}})
	}
	for _, it := range items {
		env := env
		if it.inherited {
			env.Dir = mainDir // relative paths of inherited options stay the main config's
		}
		e, err := buildEntry(reg, it.gc, it.over, file, it.path, it.keys, env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if e.Kind == Response || e.Kind == Guard {
			errs = append(errs, fmt.Errorf("%s:%d: %s: %s is a response gate; it belongs to the default policy only", file, it.gc.Line(), it.path, it.gc.Gate))
			continue
		}
		p.Gates = append(p.Gates, e)
	}
	errs = append(errs, checkNames(file, where, p.Gates)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
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
func optionsError(loc, block string, err error) error {
	if ke := (*config.KeyError)(nil); errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%s: %s: %w", loc, block, err)
}

// keyPaths are the key paths of an entry's options block and of its
// seat's gateOptions override, for type errors.
type keyPaths struct{ options, over string }

func buildEntry(reg Registry, gc config.GateConfig, over *config.GateOverride, file, path string, keys keyPaths, env Env) (*GateEntry, error) {
	loc := fmt.Sprintf("%s:%d: %s", file, gc.Line(), path)
	f, ok := reg[gc.Gate]
	if gc.Gate == "" {
		return nil, fmt.Errorf("%s: gate: missing", loc)
	}
	if !ok {
		return nil, fmt.Errorf("%s: unknown gate %q", loc, gc.Gate)
	}
	loc = fmt.Sprintf("%s (%s)", loc, gc.Gate)
	modeStr := gc.Mode
	if over != nil && over.Mode != "" {
		modeStr = over.Mode
	}
	mode, ok := parseMode(modeStr)
	if !ok {
		return nil, fmt.Errorf("%s: mode: %q is not enforce, warn or off", loc, modeStr)
	}
	if f.Kind == Guard && mode == Warn {
		return nil, fmt.Errorf("%s: mode: %s accepts only enforce and off", loc, gc.Gate)
	}
	var opts any
	if f.Options != nil {
		opts = f.Options()
		if err := config.DecodeOptions(file, keys.options, &gc.Options, opts); err != nil {
			return nil, optionsError(loc, "options", err)
		}
		if over != nil {
			if err := config.DecodeOptions(file, keys.over, &over.Options, opts); err != nil {
				return nil, optionsError(loc, "gateOptions", err)
			}
		}
	} else if config.HasOptions(&gc.Options) || (over != nil && config.HasOptions(&over.Options)) {
		return nil, fmt.Errorf("%s: %s takes no options", loc, gc.Gate)
	}
	g, err := f.New(opts, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if g.Kind() != f.Kind {
		return nil, fmt.Errorf("%s: gate kind %s does not match its factory's %s", loc, g.Kind(), f.Kind)
	}
	e := &GateEntry{Name: f.ResultName, Factory: f.Name, Mode: mode, Kind: f.Kind, Gate: g, Options: opts, src: gc}
	if gc.Name != "" {
		e.Name = gc.Name
	}
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
		return nil, fmt.Errorf("%s: gate does not implement its kind's interface", loc)
	}
	if ej, isEJ := g.(EmptyJudge); isEJ {
		e.judgesEmpty = ej.JudgesEmpty()
	}
	return e, nil
}

func (s *Snapshot) hash(data []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "config %d\n", len(data))
	h.Write(data)
	for _, f := range s.Files[1:] {
		b, _ := os.ReadFile(f)
		fmt.Fprintf(h, "file %s %d\n", f, len(b))
		h.Write(b)
	}
	for _, p := range s.policies {
		fmt.Fprintf(h, "policy %s shadow=%v failFast=%v\n", p.Key, p.Shadow, p.FailFast)
		for _, e := range p.Gates {
			opts, err := json.Marshal(e.Options) // canonical: pointers are followed, not printed
			if err != nil {
				opts = []byte(err.Error())
			}
			fmt.Fprintf(h, "gate %s %s %s %s\n", e.Name, e.Factory, e.Mode, opts)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Describe lists each policy's effective gates, for `config validate`.
func (s *Snapshot) Describe() string {
	var b strings.Builder
	for _, p := range s.policies {
		fmt.Fprintf(&b, "%s (action %s, failFast %v):\n", p.Key, map[bool]string{false: "enforce", true: "shadow"}[p.Shadow], p.FailFast)
		if len(p.Gates) == 0 {
			b.WriteString("  (no gates)\n")
		}
		for i, e := range p.Gates {
			fmt.Fprintf(&b, "  %2d. %-26s %-16s %-8s %s\n", i+1, e.Name, e.Factory, e.Mode, e.Kind)
		}
	}
	return b.String()
}
