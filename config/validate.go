package config

import (
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bidguard/bidguard/capture"
)

// validate checks every key that does not need the gate registry, one
// function per block, and returns every error found. name is the config
// file, the prefix of every error but those of seat files.
func (c *Config) validate(name string) []error {
	v := &problems{name: name}
	c.validateListen(v)
	upstreams := c.validateUpstreams(v)
	c.validateLimits(v)
	c.validateDeadline(v)
	c.validateReload(v)
	c.validateLog(v)
	c.validateShutdown(v)
	c.validateAudit(v)
	c.validateCapture(v)
	c.validateQuarantine(v, upstreams)
	c.validatePolicy(v)
	c.validateSeats(v, upstreams)
	return v.errs
}

// problems gathers the errors of one validation.
type problems struct {
	name string // the config file
	errs []error
}

// bad adds an error about the config file.
func (v *problems) bad(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: "+format, append([]any{v.name}, args...)...))
}

// in adds errors found in file, each prefixed with it.
func (v *problems) in(file string, errs []error) {
	for _, err := range errs {
		v.errs = append(v.errs, fmt.Errorf("%s: %w", file, err))
	}
}

var hostPort = regexp.MustCompile(`^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):[0-9]{1,5}$`)

func (c *Config) validateListen(v *problems) {
	validateAddr(v, "listen", c.Listen)
	validateAddr(v, "adminListen", c.AdminListen)
	if c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		v.bad("adminListen: %q is also listen", c.AdminListen)
	}
}

// validateAddr checks a listen address: host:port with an IP, a name or
// nothing (every interface) as host, and a port from 1 to 65535, or 0 for
// a free port chosen at start (tests).
func validateAddr(v *problems, key, addr string) {
	if !hostPort.MatchString(addr) {
		v.bad("%s: %q is not host:port", key, addr)
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.bad("%s: %q is not host:port", key, addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n > 65535 {
		v.bad("%s: %q: port %s is not in 1-65535", key, addr, port)
	}
	if strings.HasPrefix(addr, "[") && net.ParseIP(host) == nil {
		v.bad("%s: %q: %q is not an IPv6 address", key, addr, host)
	}
}

// validateUpstreams checks the upstreams, gives those without a path "/",
// and returns the upstream names, which seat keys and quarantine.seats may
// name.
func (c *Config) validateUpstreams(v *problems) map[string]bool {
	names, paths := map[string]bool{}, map[string]bool{}
	for i, u := range c.Upstreams {
		p := fmt.Sprintf("upstreams[%d]", i)
		if u.Name == "" {
			v.bad("%s.name: missing", p)
		} else if names[u.Name] {
			v.bad("%s.name: %q is used twice", p, u.Name)
		} else if strings.ContainsAny(u.Name, "/ ") {
			v.bad("%s.name: %q may not contain '/' or spaces", p, u.Name)
		}
		names[u.Name] = true
		t, err := ParseUpstreamURL(u.URL)
		if err != nil {
			v.bad("%s.url: %w", p, err)
		}
		c.validateUpstreamKeys(v, p, i, err != nil || t.TLS)
		if u.IdleTimeoutMs != nil && *u.IdleTimeoutMs < 0 {
			v.bad("%s.idleTimeoutMs: must be >= 0", p)
		}
		if u.OnError != OnErrorNoBid && u.OnError != OnErrorStatus {
			v.bad("%s.onError: %q is not nobid or status", p, u.OnError)
		}
		if u.Path == "" {
			c.Upstreams[i].Path = "/"
			u.Path = "/"
		}
		if !strings.HasPrefix(u.Path, "/") {
			v.bad("%s.path: %q must start with /", p, u.Path)
		} else if paths[u.Path] {
			v.bad("%s.path: %q is routed twice", p, u.Path)
		}
		paths[u.Path] = true
		if u.AcceptEncoding != "" && u.AcceptEncoding != "gzip" {
			v.bad("%s.acceptEncoding: %q is not gzip", p, u.AcceptEncoding)
		}
		validateDeadline(v, p+".deadline", u.Deadline.Apply(c.Deadline))
	}
	return names
}

func (c *Config) validateLimits(v *problems) {
	l := c.Limits
	for _, k := range []struct {
		key string
		v   int
	}{{"maxRequestBytes", l.MaxRequestBytes}, {"maxResponseBytes", l.MaxResponseBytes},
		{"maxInFlight", l.MaxInFlight}, {"maxBids", l.MaxBids}, {"idleTimeoutMs", l.IdleTimeoutMs}} {
		if k.v <= 0 {
			v.bad("limits.%s: must be > 0", k.key)
		}
	}
	if l.MaxConns < 0 {
		v.bad("limits.maxConns: must be >= 0 (0: derived from RLIMIT_NOFILE)")
	}
}

func (c *Config) validateDeadline(v *problems) { validateDeadline(v, "deadline", c.Deadline) }

// validateDeadline checks a deadline block, the global one or an
// upstream's with its overrides applied (path names it).
func validateDeadline(v *problems, path string, d Deadline) {
	bad := func(format string, args ...any) { v.bad("%s."+format, append([]any{path}, args...)...) }
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
}

func (c *Config) validateReload(v *problems) {
	if c.ReloadPollMs <= 0 {
		v.bad("reloadPollMs: must be > 0")
	}
}

func (c *Config) validateLog(v *problems) {
	if r := c.Log.RejectionsPerSecond; r != nil && *r < 0 {
		v.bad("log.rejectionsPerSecond: must be >= 0")
	}
	if _, ok := LogLevel(c.Log.Level); !ok {
		v.bad("log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		v.bad("log.format: %q is not text or json", c.Log.Format)
	}
}

func (c *Config) validateShutdown(v *problems) {
	if c.Shutdown.DrainMs < 0 {
		v.bad("shutdown.drainMs: must be >= 0 (0: stop accepting at once)")
	}
}

func (c *Config) validateAudit(v *problems) {
	if c.Audit.FsyncEvery <= 0 {
		v.bad("audit.fsyncEvery: must be > 0")
	}
	if c.Audit.Queue <= 0 {
		v.bad("audit.queue: must be > 0")
	}
	if c.Audit.SegmentBytes < 4096 {
		v.bad("audit.segmentBytes: must be at least 4096")
	}
}

func (c *Config) validateCapture(v *problems) {
	cp := c.Capture
	if err := capture.ValidateSample(cp.Sample); err != nil {
		v.bad("capture.sample: %v", err)
	} else if cp.Sample > 0 && cp.Path == "" {
		v.bad("capture.sample: set without capture.path, where the auctions would go")
	}
	if cp.MaxBytes < capture.MinMaxBytes {
		v.bad("capture.maxBytes: must be at least %d", capture.MinMaxBytes)
	}
	if cp.MaxFiles <= 0 {
		v.bad("capture.maxFiles: must be > 0")
	}
	for i, p := range cp.Redact {
		if err := capture.ValidatePath(p); err != nil {
			v.bad("capture.redact[%d]: %v", i, err)
		}
	}
}

// validateQuarantine reports what the detector would refuse (its settings
// without the seats' overrides, which validateSeats reports in the seats'
// files) and operator seats of an unknown upstream.
func (c *Config) validateQuarantine(v *problems, upstreams map[string]bool) {
	set := c.QuarantineSettings()
	set.Overrides = nil
	v.in(v.name, set.Validate())
	for _, s := range c.Quarantine.Seats {
		if up, _, ok := strings.Cut(s, "/"); ok && !upstreams[up] {
			v.bad("quarantine.seats: %q: no upstream named %q", s, up)
		}
	}
}

func (c *Config) validatePolicy(v *problems) {
	switch c.Policy.Action {
	case "enforce", "shadow":
	default:
		v.bad("policy.action: %q is not enforce or shadow", c.Policy.Action)
	}
	switch c.Policy.OnDeadline {
	case "drop", "forward":
	default:
		v.bad("policy.onDeadline: %q is not drop or forward", c.Policy.OnDeadline)
	}
}

// validateSeats checks the seat policies' keys that need no gate registry;
// each error names the file the seat was defined in.
func (c *Config) validateSeats(v *problems, upstreams map[string]bool) {
	keys := make([]string, 0, len(c.Seats))
	for k := range c.Seats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := c.Seats[k]
		bad := func(format string, args ...any) {
			where := fmt.Sprintf("%s: seat %q", s.file, k)
			v.errs = append(v.errs, fmt.Errorf("%s: "+format, append([]any{where}, args...)...))
		}
		if k == "" {
			bad("a seat key may not be empty")
		}
		if up, _, ok := strings.Cut(k, "/"); ok && !upstreams[up] {
			bad("no upstream named %q", up)
		}
		if s.OnDeadline != nil {
			bad("onDeadline belongs to the default policy only")
		}
		if s.SeatNonBid != nil {
			bad("seatNonBid belongs to the default policy only")
		}
		if s.CurrencyRates != nil {
			bad("currencyRates belongs to the default policy only")
		}
		gates, addGates := s.listLens()
		if gates > 0 && !s.ReplaceGates {
			bad("gates needs replaceGates: true (use addGates to append)")
		}
		if s.ReplaceGates && addGates > 0 {
			bad("addGates and replaceGates: true cannot be combined")
		}
		switch s.Action {
		case "", "enforce", "shadow":
		default:
			bad("action: %q is not enforce or shadow", s.Action)
		}
		if s.Quarantine != nil {
			th := toSettings(s.Quarantine.Apply(c.Quarantine.Thresholds))
			v.in(s.file, th.Validate(fmt.Sprintf("seat %q: quarantine", k)))
		}
	}
}

// LogLevel parses a log.level value (debug, info, warn, error).
func LogLevel(s string) (slog.Level, bool) {
	switch s {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}
