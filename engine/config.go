package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bidguard/bidguard/configs"
	"go.yaml.in/yaml/v3"
)

// Config is the whole YAML file. Field comments are the configuration
// reference. A key left out takes its default (DefaultConfig); a key given,
// zero included, keeps its value: an explicit 0 is either meaningful (said
// in the field's comment) or a config error, never read as absent.
type Config struct {
	// Listen is the exchange-facing address of `serve`.
	Listen string `yaml:"listen"`
	// AdminListen serves /metrics, /healthz, /readyz and the quarantine endpoints.
	AdminListen string `yaml:"adminListen"`
	// Upstreams are the bidders, routed by exact path ("/" is the catch-all).
	Upstreams []Upstream `yaml:"upstreams"`
	// Limits bound every request.
	Limits Limits `yaml:"limits"`
	// Deadline derives the answer deadline and the bidder's budget from tmax.
	Deadline Deadline `yaml:"deadline"`
	// ReloadPollMs is how often the config and the files it names are polled
	// (1000; > 0: polling cannot be turned off, SIGHUP reloads at once).
	ReloadPollMs int `yaml:"reloadPollMs"`
	// Audit configures the tamper-evident audit log ("" path: off).
	Audit Audit `yaml:"audit"`
	// Admin configures the admin endpoints.
	Admin Admin `yaml:"admin"`
	// Quarantine configures the anomaly detector.
	Quarantine Quarantine `yaml:"quarantine"`
	// Log configures what serve logs beside startup and errors.
	Log Log `yaml:"log"`
	// Policy is the default policy. Left out (or without gates), it runs the
	// gates of the embedded default policy.
	Policy PolicyConfig `yaml:"policy"`
	// Seats are seat policies keyed by seatbid.seat or "upstream/seat".
	Seats map[string]SeatConfig `yaml:"seats"`
	// SeatsDir holds one YAML file per seat (`seat: <key>` plus SeatConfig keys).
	SeatsDir string `yaml:"seatsDir"`
}

// Upstream is one bidder.
type Upstream struct {
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// Path is matched exactly against the exchange's request path; "/" routes everything.
	Path string `yaml:"path"`
	// Deadline overrides keys of the global deadline block for this upstream.
	Deadline DeadlineOverride `yaml:"deadline"`
	// AcceptEncoding may be "gzip" to ask the bidder for compressed answers.
	AcceptEncoding string `yaml:"acceptEncoding"`
	// IdleTimeoutMs closes pooled connections idle longer (default 4000;
	// keep it below the bidder's own idle timeout; 0: no keep-alive).
	IdleTimeoutMs *int `yaml:"idleTimeoutMs"`
	// OnError is what the exchange gets on a bidder failure: nobid (204,
	// the default) or status (504 for a timeout, 502 otherwise).
	OnError string `yaml:"onError"`
}

// Limits bound bodies, concurrency and bids. Each must be > 0: a limit of 0
// would refuse every request or response.
type Limits struct {
	MaxRequestBytes  int `yaml:"maxRequestBytes"`  // default 262144 (256 KiB)
	MaxResponseBytes int `yaml:"maxResponseBytes"` // default 1048576 (1 MiB), also after decompression
	MaxInFlight      int `yaml:"maxInFlight"`      // default 2048
	MaxBids          int `yaml:"maxBids"`          // default 1000
	// MaxConns caps the exchange listener's open connections; excess ones
	// are closed at once. 0 (the default): derived at start from
	// RLIMIT_NOFILE (rtb.DefaultMaxConns).
	MaxConns int `yaml:"maxConns"`
	// IdleTimeoutMs closes exchange keep-alive connections idle this long
	// (default 10000). Read at start: a reload changes it at the next start.
	IdleTimeoutMs int `yaml:"idleTimeoutMs"`
}

// Deadline is DESIGN.md "Deadlines", in milliseconds.
type Deadline struct {
	DefaultTmaxMs  int `yaml:"defaultTmaxMs"`  // T when the request has no tmax (200; > 0)
	MaxTmaxMs      int `yaml:"maxTmaxMs"`      // cap on T (1000; > 0)
	ReturnMarginMs int `yaml:"returnMarginMs"` // D = arrival + T - margin (5; 0: answer right at T)
	GateReserveMs  int `yaml:"gateReserveMs"`  // kept for the gates out of the bidder's budget (7; 0: none, only without tmaxGuard)
	MinBidderMs    int `yaml:"minBidderMs"`    // below this budget, answer 204 at once (10; > 0: a bidder's tmax is at least 1)
}

// DeadlineOverride is an upstream's partial deadline block.
type DeadlineOverride struct {
	DefaultTmaxMs  *int `yaml:"defaultTmaxMs"`
	MaxTmaxMs      *int `yaml:"maxTmaxMs"`
	ReturnMarginMs *int `yaml:"returnMarginMs"`
	GateReserveMs  *int `yaml:"gateReserveMs"`
	MinBidderMs    *int `yaml:"minBidderMs"`
}

// Apply returns d with the override's keys replaced.
func (o DeadlineOverride) Apply(d Deadline) Deadline {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&d.DefaultTmaxMs, o.DefaultTmaxMs)
	set(&d.MaxTmaxMs, o.MaxTmaxMs)
	set(&d.ReturnMarginMs, o.ReturnMarginMs)
	set(&d.GateReserveMs, o.GateReserveMs)
	set(&d.MinBidderMs, o.MinBidderMs)
	return d
}

// Audit configures the audit log.
type Audit struct {
	Path         string `yaml:"path"`         // "" turns the log off
	KeyFile      string `yaml:"keyFile"`      // HMAC key; plain SHA-256 when ""
	FsyncEvery   int    `yaml:"fsyncEvery"`   // records between fsyncs (64; > 0)
	SegmentBytes int64  `yaml:"segmentBytes"` // rotation size (64 MiB; at least 4096)
	Queue        int    `yaml:"queue"`        // records queued before dropping (65536; > 0)
}

// Log configures serve's log of the bid path.
type Log struct {
	// RejectionsPerSecond caps the lines of the rejection log (one per
	// rejected or warned bid: seat, bid id, gate, reason); suppressed lines
	// are counted in the next line. Default 10; 0 turns the log off.
	RejectionsPerSecond *int `yaml:"rejectionsPerSecond"`
}

// RejectionRate is log.rejectionsPerSecond with its default applied.
func (l Log) RejectionRate() int {
	if l.RejectionsPerSecond == nil {
		return DefaultRejectionsPerSecond
	}
	return *l.RejectionsPerSecond
}

// Admin configures the admin listener's protected endpoints.
type Admin struct {
	TokenFile string `yaml:"tokenFile"` // bearer token for the quarantine endpoints
}

// Quarantine configures the anomaly detector (DESIGN.md).
type Quarantine struct {
	Enabled        bool                 `yaml:"enabled"`
	Window         Duration             `yaml:"window"`         // sliding window (1m; > 0)
	BaselineWindow Duration             `yaml:"baselineWindow"` // decaying baseline (1h; > 0)
	Dwell          Duration             `yaml:"dwell"`          // how long a signal must stay over (30s; 0: at once)
	TTL            Duration             `yaml:"ttl"`            // quarantine length (10m; > 0)
	Calm           Duration             `yaml:"calm"`           // calm period before release (2m; 0: released when ttl ends)
	MinSamples     int                  `yaml:"minSamples"`     // bids in the window before judging (100; > 0)
	MaxShare       float64              `yaml:"maxShare"`       // most of active seats quarantined at once (0.5; in (0, 1])
	Thresholds     QuarantineThresholds `yaml:"thresholds"`
	// Seats are operator-quarantined seats.
	Seats []string `yaml:"seats"`
}

// QuarantineThresholds are the signals' thresholds. Each must be > 0: at 0
// every seat would be over it.
type QuarantineThresholds struct {
	Rejections float64 `yaml:"rejections"` // rejection rate, in (0, 1] (0.5)
	Price      float64 `yaml:"price"`      // p95 over baseline p95 (5)
	Novelty    float64 `yaml:"novelty"`    // share of never-seen crid/adomain, in (0, 1] (0.8)
	Velocity   float64 `yaml:"velocity"`   // bids per window over baseline (10)
}

// QuarantineOverride is a seat's `quarantine:` block: the thresholds it
// sets replace the global ones for that seat; a key left out inherits.
type QuarantineOverride struct {
	Rejections *float64 `yaml:"rejections"`
	Price      *float64 `yaml:"price"`
	Novelty    *float64 `yaml:"novelty"`
	Velocity   *float64 `yaml:"velocity"`
}

// Apply returns t with the override's keys replaced.
func (o QuarantineOverride) Apply(t QuarantineThresholds) QuarantineThresholds {
	for _, f := range []struct {
		dst *float64
		v   *float64
	}{{&t.Rejections, o.Rejections}, {&t.Price, o.Price}, {&t.Novelty, o.Novelty}, {&t.Velocity, o.Velocity}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return t
}

// PolicyConfig is the default policy.
type PolicyConfig struct {
	Action        string             `yaml:"action"`        // enforce | shadow
	OnDeadline    string             `yaml:"onDeadline"`    // drop | forward
	FailFast      *bool              `yaml:"failFast"`      // default true
	SeatNonBid    bool               `yaml:"seatNonBid"`    // answer rejections with the IAB seat-non-bid extension
	CurrencyRates map[string]float64 `yaml:"currencyRates"` // BASE/QUOTE: one BASE in QUOTE; codes in any case
	// Gates left out (or null) are the embedded default policy's gates;
	// `gates: []` runs none (config validate warns).
	Gates []GateConfig `yaml:"gates"`
}

// GateConfig is one gate entry: exactly gate, name, mode, options.
type GateConfig struct {
	Gate    string    `yaml:"gate"`
	Name    string    `yaml:"name"`
	Mode    string    `yaml:"mode"`
	Options yaml.Node `yaml:"options"`
	line    int
}

// GateOverride changes an inherited gate in a seat policy.
type GateOverride struct {
	Mode    string    `yaml:"mode"`
	Options yaml.Node `yaml:"options"`
}

// SeatConfig is a seat policy. It inherits the default policy.
type SeatConfig struct {
	// Seat is the key, in files of seatsDir only.
	Seat         string                  `yaml:"seat"`
	AddGates     []GateConfig            `yaml:"addGates"`
	GateOptions  map[string]GateOverride `yaml:"gateOptions"`
	ReplaceGates bool                    `yaml:"replaceGates"`
	Gates        []GateConfig            `yaml:"gates"`
	Action       string                  `yaml:"action"`
	FailFast     *bool                   `yaml:"failFast"`
	Quarantine   *QuarantineOverride     `yaml:"quarantine"`
	// These belong to the default policy only; setting them is a config error.
	OnDeadline    *string            `yaml:"onDeadline"`
	SeatNonBid    *bool              `yaml:"seatNonBid"`
	CurrencyRates map[string]float64 `yaml:"currencyRates"`

	file string // where the seat was defined, for error messages
	line int
}

// Duration is a YAML duration ("30s", "5m").
type Duration struct{ D int64 }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	d.D = v
	return nil
}

// DefaultConfig is the configuration of a file that sets nothing: the
// defaults of DESIGN.md. ParseConfig decodes a file over it, so a key the
// file gives, zero included, replaces its default. policy.gates is left nil:
// ParseConfig fills it from the embedded config when the file has none.
func DefaultConfig() Config {
	return Config{
		Listen:       "127.0.0.1:8080",
		AdminListen:  "127.0.0.1:9090",
		Limits:       Limits{MaxRequestBytes: 262144, MaxResponseBytes: 1048576, MaxInFlight: 2048, MaxBids: 1000, IdleTimeoutMs: 10000},
		Deadline:     Deadline{DefaultTmaxMs: 200, MaxTmaxMs: 1000, ReturnMarginMs: 5, GateReserveMs: 7, MinBidderMs: 10},
		ReloadPollMs: 1000,
		Audit:        Audit{FsyncEvery: 64, SegmentBytes: 64 << 20, Queue: 65536},
		Quarantine: Quarantine{
			Window: Duration{60e9}, BaselineWindow: Duration{3600e9}, Dwell: Duration{30e9}, TTL: Duration{600e9},
			Calm: Duration{120e9}, MinSamples: 100, MaxShare: 0.5,
			Thresholds: QuarantineThresholds{Rejections: 0.5, Price: 5, Novelty: 0.8, Velocity: 10},
		},
		Policy: PolicyConfig{Action: "enforce", OnDeadline: "drop"},
	}
}

// defaultGates returns the gate entries of the embedded default policy
// (configs/bidguard.yaml), for a config that leaves out policy.gates.
func defaultGates() ([]GateConfig, error) {
	var c Config
	if err := decodeStrict(configs.DefaultName, configs.Default, &c); err != nil {
		return nil, err
	}
	return c.Policy.Gates, nil
}

// LoadConfigFile reads, strictly decodes and defaults a config file,
// including the seat files of seatsDir. Every error found is returned
// together (errors.Join).
func LoadConfigFile(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ParseConfig(path, data)
	return cfg, data, err
}

// ParseConfig strictly decodes data (named name in errors) over the
// defaults, gives a policy without gates the embedded default policy's
// gates, reads seatsDir relative to name's directory, and validates every
// key that does not need the gate registry.
func ParseConfig(name string, data []byte) (*Config, error) {
	c := DefaultConfig()
	var errs []error
	if err := decodeStrict(name, data, &c); err != nil {
		return nil, err
	}
	for i := range c.Upstreams {
		if c.Upstreams[i].OnError == "" {
			c.Upstreams[i].OnError = OnErrorNoBid
		}
	}
	if c.Policy.Gates == nil {
		g, err := defaultGates()
		if err != nil {
			return nil, err
		}
		c.Policy.Gates = g
	}
	if c.SeatsDir != "" {
		dir := c.SeatsDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(name), dir)
		}
		errs = append(errs, c.loadSeatsDir(dir)...)
	}
	for k, s := range c.Seats {
		if s.file == "" {
			s.file = name
			c.Seats[k] = s
		}
	}
	errs = append(errs, c.validateStatic(name)...)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return &c, nil
}

func (c *Config) loadSeatsDir(dir string) []error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []error{fmt.Errorf("seatsDir: %v", err)}
	}
	var errs []error
	if c.Seats == nil {
		c.Seats = map[string]SeatConfig{}
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		path := filepath.Join(dir, n)
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var s SeatConfig
		if err := decodeStrict(path, data, &s); err != nil {
			errs = append(errs, err)
			continue
		}
		s.file = path
		if s.Seat == "" {
			errs = append(errs, fmt.Errorf("%s: seat: missing (a seat file names its seat key)", path))
			continue
		}
		if _, dup := c.Seats[s.Seat]; dup {
			errs = append(errs, fmt.Errorf("%s: seat %q is defined twice", path, s.Seat))
			continue
		}
		c.Seats[s.Seat] = s
	}
	return errs
}

// SeatFiles lists the seat files a config reads, for reload polling.
func (c *Config) SeatFiles(configPath string) []string {
	var out []string
	for _, s := range c.Seats {
		if s.file != "" && s.file != configPath {
			out = append(out, s.file)
		}
	}
	sort.Strings(out)
	return out
}

var hostPort = regexp.MustCompile(`^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):[0-9]{1,5}$`)

func (c *Config) validateStatic(name string) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}
	if !hostPort.MatchString(c.Listen) {
		bad("listen: %q is not host:port", c.Listen)
	}
	if !hostPort.MatchString(c.AdminListen) {
		bad("adminListen: %q is not host:port", c.AdminListen)
	}
	names, paths := map[string]bool{}, map[string]bool{}
	for i, u := range c.Upstreams {
		p := fmt.Sprintf("upstreams[%d]", i)
		if u.Name == "" {
			bad("%s.name: missing", p)
		} else if names[u.Name] {
			bad("%s.name: %q is used twice", p, u.Name)
		} else if strings.ContainsAny(u.Name, "/ ") {
			bad("%s.name: %q may not contain '/' or spaces", p, u.Name)
		}
		names[u.Name] = true
		if _, err := ParseUpstreamURL(u.URL); err != nil {
			bad("%s.url: %v", p, err)
		}
		if u.IdleTimeoutMs != nil && *u.IdleTimeoutMs < 0 {
			bad("%s.idleTimeoutMs: must be >= 0", p)
		}
		if u.OnError != OnErrorNoBid && u.OnError != OnErrorStatus {
			bad("%s.onError: %q is not nobid or status", p, u.OnError)
		}
		if u.Path == "" {
			c.Upstreams[i].Path = "/"
			u.Path = "/"
		}
		if !strings.HasPrefix(u.Path, "/") {
			bad("%s.path: %q must start with /", p, u.Path)
		} else if paths[u.Path] {
			bad("%s.path: %q is routed twice", p, u.Path)
		}
		paths[u.Path] = true
		if u.AcceptEncoding != "" && u.AcceptEncoding != "gzip" {
			bad("%s.acceptEncoding: %q is not gzip", p, u.AcceptEncoding)
		}
		errs = append(errs, validateDeadline(name, p+".deadline", u.Deadline.Apply(c.Deadline))...)
	}
	l := c.Limits
	for k, v := range map[string]int{"maxRequestBytes": l.MaxRequestBytes, "maxResponseBytes": l.MaxResponseBytes,
		"maxInFlight": l.MaxInFlight, "maxBids": l.MaxBids, "idleTimeoutMs": l.IdleTimeoutMs} {
		if v <= 0 {
			bad("limits.%s: must be > 0", k)
		}
	}
	if l.MaxConns < 0 {
		bad("limits.maxConns: must be >= 0 (0: derived from RLIMIT_NOFILE)")
	}
	errs = append(errs, validateDeadline(name, "deadline", c.Deadline)...)
	if c.ReloadPollMs <= 0 {
		bad("reloadPollMs: must be > 0")
	}
	if r := c.Log.RejectionsPerSecond; r != nil && *r < 0 {
		bad("log.rejectionsPerSecond: must be >= 0")
	}
	if c.Audit.FsyncEvery <= 0 {
		bad("audit.fsyncEvery: must be > 0")
	}
	if c.Audit.Queue <= 0 {
		bad("audit.queue: must be > 0")
	}
	if c.Audit.SegmentBytes < 4096 {
		bad("audit.segmentBytes: must be at least 4096")
	}
	q := c.Quarantine
	if q.MinSamples <= 0 {
		bad("quarantine.minSamples: must be > 0")
	}
	if !(q.MaxShare > 0 && q.MaxShare <= 1) {
		bad("quarantine.maxShare: must be in (0, 1]")
	}
	for _, d := range []struct {
		k string
		v Duration
	}{{"window", q.Window}, {"baselineWindow", q.BaselineWindow}, {"ttl", q.TTL}} {
		if d.v.D <= 0 {
			bad("quarantine.%s: must be > 0", d.k)
		}
	}
	errs = append(errs, validateThresholds(name, "quarantine.thresholds", q.Thresholds)...)
	switch c.Policy.Action {
	case "enforce", "shadow":
	default:
		bad("policy.action: %q is not enforce or shadow", c.Policy.Action)
	}
	switch c.Policy.OnDeadline {
	case "drop", "forward":
	default:
		bad("policy.onDeadline: %q is not drop or forward", c.Policy.OnDeadline)
	}
	keys := make([]string, 0, len(c.Seats))
	for k := range c.Seats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := c.Seats[k]
		where := fmt.Sprintf("%s: seat %q", s.file, k)
		if k == "" {
			errs = append(errs, fmt.Errorf("%s: a seat key may not be empty", where))
		}
		if up, _, ok := strings.Cut(k, "/"); ok && !names[up] {
			errs = append(errs, fmt.Errorf("%s: no upstream named %q", where, up))
		}
		if s.OnDeadline != nil {
			errs = append(errs, fmt.Errorf("%s: onDeadline belongs to the default policy only", where))
		}
		if s.SeatNonBid != nil {
			errs = append(errs, fmt.Errorf("%s: seatNonBid belongs to the default policy only", where))
		}
		if s.CurrencyRates != nil {
			errs = append(errs, fmt.Errorf("%s: currencyRates belongs to the default policy only", where))
		}
		if len(s.Gates) > 0 && !s.ReplaceGates {
			errs = append(errs, fmt.Errorf("%s: gates needs replaceGates: true (use addGates to append)", where))
		}
		if s.ReplaceGates && len(s.AddGates) > 0 {
			errs = append(errs, fmt.Errorf("%s: addGates and replaceGates: true cannot be combined", where))
		}
		switch s.Action {
		case "", "enforce", "shadow":
		default:
			errs = append(errs, fmt.Errorf("%s: action: %q is not enforce or shadow", where, s.Action))
		}
		if s.Quarantine != nil {
			errs = append(errs, validateThresholds(s.file, fmt.Sprintf("seat %q: quarantine", k), s.Quarantine.Apply(q.Thresholds))...)
		}
	}
	for _, s := range q.Seats {
		if s == "" {
			bad("quarantine.seats: a seat may not be empty")
		}
	}
	return errs
}

func validateThresholds(name, path string, t QuarantineThresholds) []error {
	var errs []error
	if !(t.Rejections > 0 && t.Rejections <= 1) {
		errs = append(errs, fmt.Errorf("%s: %s.rejections: must be in (0, 1]", name, path))
	}
	if !(t.Novelty > 0 && t.Novelty <= 1) {
		errs = append(errs, fmt.Errorf("%s: %s.novelty: must be in (0, 1]", name, path))
	}
	if !(t.Price > 0) || !(t.Velocity > 0) {
		errs = append(errs, fmt.Errorf("%s: %s: price and velocity must be > 0", name, path))
	}
	return errs
}

func validateDeadline(name, path string, d Deadline) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s."+format, append([]any{name, path}, args...)...))
	}
	if d.DefaultTmaxMs <= 0 {
		bad("defaultTmaxMs: must be > 0")
	}
	if d.MaxTmaxMs <= 0 {
		bad("maxTmaxMs: must be > 0")
	}
	if d.ReturnMarginMs < 0 {
		bad("returnMarginMs: must be >= 0")
	}
	if d.GateReserveMs < 0 {
		bad("gateReserveMs: must be >= 0")
	}
	if d.MinBidderMs <= 0 {
		bad("minBidderMs: must be > 0")
	}
	if d.MaxTmaxMs > 0 && d.ReturnMarginMs+d.GateReserveMs+d.MinBidderMs > d.MaxTmaxMs {
		bad("maxTmaxMs: %d leaves no bidder budget after returnMarginMs + gateReserveMs + minBidderMs", d.MaxTmaxMs)
	}
	return errs
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)
var yamlUnknown = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

// decodeStrict decodes one YAML document, rejecting unknown keys, and
// rewrites yaml.v3's errors as "<file>:<line>: <problem>".
func decodeStrict(name string, data []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(out)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		errs := make([]error, 0, len(te.Errors))
		for _, m := range te.Errors {
			errs = append(errs, yamlError(name, m))
		}
		return joinErrors(errs)
	}
	return yamlError(name, strings.TrimPrefix(err.Error(), "yaml: "))
}

func yamlError(name, msg string) error {
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		what := m[2]
		if u := yamlUnknown.FindStringSubmatch(what); u != nil {
			what = fmt.Sprintf("unknown key %q", u[1])
		}
		return fmt.Errorf("%s:%s: %s", name, m[1], what)
	}
	return fmt.Errorf("%s: %s", name, msg)
}

// decodeOptions strictly decodes a gate's options node into dst: every
// mapping key must name a yaml-tagged field (recursively).
func decodeOptions(name string, node *yaml.Node, dst any) error {
	if node == nil || node.Kind == 0 {
		return nil
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return nil
	}
	var errs []error
	checkKeys(name, node, reflect.TypeOf(dst), &errs)
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	if err := node.Decode(dst); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				errs = append(errs, yamlError(name, m))
			}
			return joinErrors(errs)
		}
		return fmt.Errorf("%s:%d: %v", name, node.Line, err)
	}
	return nil
}

func checkKeys(name string, n *yaml.Node, t reflect.Type, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if t == reflect.TypeOf(yaml.Node{}) || reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
				*errs = append(*errs, fmt.Errorf("%s:%d: expected a mapping", name, n.Line))
			}
			return
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			fields[tag] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			ft, ok := fields[k]
			if !ok {
				*errs = append(*errs, fmt.Errorf("%s:%d: unknown option %q", name, n.Content[i].Line, k))
				continue
			}
			checkKeys(name, n.Content[i+1], ft, errs)
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				checkKeys(name, n.Content[i], t.Elem(), errs)
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				checkKeys(name, c, t.Elem(), errs)
			}
		}
	}
}

// UnmarshalYAML decodes a gate entry, which has exactly the keys gate, name,
// mode and options, and records its line.
func (g *GateConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a gate entry is a mapping with the keys gate, name, mode, options", n.Line)}}
	}
	var bad []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "gate", "name", "mode":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				bad = append(bad, fmt.Sprintf("line %d: %s must be a string", v.Line, k.Value))
				continue
			}
			switch k.Value {
			case "gate":
				g.Gate = v.Value
			case "name":
				g.Name = v.Value
			default:
				g.Mode = v.Value
			}
		case "options":
			g.Options = *v
		default:
			bad = append(bad, fmt.Sprintf("line %d: unknown key %q in a gate entry (keys: gate, name, mode, options)", k.Line, k.Value))
		}
	}
	g.line = n.Line
	if len(bad) > 0 {
		return &yaml.TypeError{Errors: bad}
	}
	return nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// parseDuration reads a Go duration; 0 may be written without a unit. A
// negative duration is an error; whether 0 is allowed is the key's to say.
func parseDuration(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n == 0 {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (30s, 5m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return int64(d), nil
}

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
