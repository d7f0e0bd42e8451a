package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/quarantine"

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
	// Capture records a sample of the judged auctions for `bidguard replay`
	// ("" path or sample 0: off).
	Capture Capture `yaml:"capture"`
	// Admin configures the admin endpoints.
	Admin Admin `yaml:"admin"`
	// Quarantine configures the anomaly detector.
	Quarantine Quarantine `yaml:"quarantine"`
	// Log configures serve's log: level, format and the rejection log.
	Log Log `yaml:"log"`
	// Shutdown configures the graceful shutdown on SIGTERM.
	Shutdown Shutdown `yaml:"shutdown"`
	// Policy is the default policy. Left out (or without gates), it runs the
	// gates of the embedded default policy.
	Policy PolicyConfig `yaml:"policy"`
	// Seats are seat policies keyed by seatbid.seat or "upstream/seat".
	Seats SeatConfigs `yaml:"seats"`
	// SeatsDir holds one YAML file per seat (`seat: <key>` plus SeatConfig keys).
	SeatsDir string `yaml:"seatsDir"`

	seatBytes map[string][]byte // the seat files of seatsDir as read, by path
}

// SeatFileBytes returns the bytes of a seat file of seatsDir as this
// config read them (false: not one it read). They must not be modified.
func (c *Config) SeatFileBytes(path string) ([]byte, bool) {
	b, ok := c.seatBytes[path]
	return b, ok
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
	// Headers shapes the request head the bidder receives beyond the
	// exchange's end-to-end headers, which are forwarded by default.
	Headers UpstreamHeaders `yaml:"headers"`
	// ForwardQuery appends the exchange's query string to the URL's own
	// query (default true); the path is always the URL's.
	ForwardQuery *bool `yaml:"forwardQuery"`
	// TLS configures an https:// upstream (not allowed for http://).
	TLS UpstreamTLS `yaml:"tls"`
	// Breaker is the upstream's circuit breaker.
	Breaker Breaker `yaml:"breaker"`
	// CompressAbove gzips answers longer than this many bytes when the
	// exchange's Accept-Encoding accepts gzip (default 0: never; >= 0).
	// Compressing costs about 20 µs of CPU per answer beside under 1 µs
	// per KB (rtb's BenchmarkGzipAnswer): set it to a few KB.
	CompressAbove int `yaml:"compressAbove"`

	dir        string   // the config file's directory: relative paths resolve against it
	setHeaders []Header // headers.set with values resolved, by name
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

// Deadline derives an answer's deadline D and the bidder's budget from the
// request's tmax T, in milliseconds.
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

// Capture configures the capture of auctions (package capture). path,
// maxBytes, maxFiles and redact are read at start; sample and onlyRejected
// follow reloads.
type Capture struct {
	Path         string  `yaml:"path"`         // the file written; rotated ones are <path>.000001 on ("" turns capture off)
	Sample       float64 `yaml:"sample"`       // share of auctions captured, by request id, in [0, 1] (0: off)
	OnlyRejected bool    `yaml:"onlyRejected"` // capture only auctions with a rejection or a would-be one
	MaxBytes     int64   `yaml:"maxBytes"`     // size of a file before rotation (64 MiB; at least 4096)
	MaxFiles     int     `yaml:"maxFiles"`     // files kept, the one written included; the oldest are deleted (8; > 0)
	// Redact are the request's JSON paths (dot-separated) whose values are
	// stored as null. Left out: user.id, user.buyeruid, user.eids,
	// device.ifa, device.ip, device.ipv6, device.geo.lat, device.geo.lon and
	// each under ext (user.ext.eids); `redact: []` stores them.
	Redact []string `yaml:"redact"`
}

// Log configures serve's log.
type Log struct {
	// Level is the least severe level logged: debug, info (the default),
	// warn or error. serve --log-level replaces it; a reload applies it.
	Level string `yaml:"level"`
	// Format is text (key=value, the default) or json (one object a
	// line). serve --log-format replaces it; read at start.
	Format string `yaml:"format"`
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

// Shutdown configures serve's graceful shutdown.
type Shutdown struct {
	// DrainMs is how long serve keeps accepting and answering on both
	// listeners after SIGTERM while /readyz answers 503, so the balancer
	// takes the sidecar out before it stops listening (default 5000; 0:
	// stop accepting at once). A second SIGTERM ends the drain early. Keep
	// it below the orchestrator's grace period (Kubernetes'
	// terminationGracePeriodSeconds) with room for the requests in flight.
	DrainMs int `yaml:"drainMs"`
}

// Admin configures the admin listener's protected endpoints.
type Admin struct {
	TokenFile string `yaml:"tokenFile"` // bearer token for the quarantine endpoints
	// ReadyRequiresUpstream makes /readyz answer 503 while the circuit
	// breaker of every upstream is open (default false: a sidecar with a
	// dead bidder usually stays in the endpoints; its answers are 204s).
	ReadyRequiresUpstream bool `yaml:"readyRequiresUpstream"`
}

// Quarantine configures the anomaly detector (package quarantine).
type Quarantine struct {
	Enabled        bool                 `yaml:"enabled"`
	Window         Duration             `yaml:"window"`         // sliding window (1m; > 0)
	BaselineWindow Duration             `yaml:"baselineWindow"` // decaying baseline (1h; > 0)
	Dwell          Duration             `yaml:"dwell"`          // how long a signal must stay over (30s; 0: at once)
	TTL            Duration             `yaml:"ttl"`            // quarantine length (10m; > 0)
	Calm           Duration             `yaml:"calm"`           // calm period before release (2m; 0: released when ttl ends)
	MinSamples     int                  `yaml:"minSamples"`     // bids in the window before judging (100; > 0)
	MaxShare       float64              `yaml:"maxShare"`       // most of the seats active in valveWindow quarantined or over a threshold in it (0.5; in (0, 1])
	ValveWindow    Duration             `yaml:"valveWindow"`    // how far back the safety valve looks (5m; 0: the default)
	MaxTTL         Duration             `yaml:"maxTTL"`         // longest hold of a flapping seat, doubling from ttl (2h; >= ttl; 0: the larger of 2h and ttl)
	PriceDrop      float64              `yaml:"priceDrop"`      // a window median or p5 under this fraction of the baseline's is a price signal (0.55; in (0, 1); 0: the default)
	MaxSeats       int                  `yaml:"maxSeats"`       // most seats tracked, idle ones evicted first (20000; 0: the default)
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

// Line is the entry's line in its file, for error messages (0 for an entry
// not read from a file).
func (g GateConfig) Line() int { return g.line }

// GateOverride changes an inherited gate in a seat policy.
type GateOverride struct {
	Mode    string    `yaml:"mode"`
	Options yaml.Node `yaml:"options"`
}

// SeatConfigs are the seat policies by key (decode.go decodes them).
type SeatConfigs map[string]SeatConfig

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

	file   string      // where the seat was defined, for error messages
	origin uint64      // the decoding it came from (Origin)
	elided *seatSource // not nil: the gate entries are left out (WithGates)
}

// File is the file the seat was defined in: the config file, or its file
// in seatsDir. Relative paths in the seat's gate options resolve against
// its directory.
func (s SeatConfig) File() string { return s.file }

// Duration is a YAML duration ("30s", "5m").
type Duration struct{ D int64 }

// Duration is d as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d.D) }

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
// defaults the field comments give. Parse decodes a file over it, so a key
// the file gives, zero included, replaces its default. policy.gates is left
// nil: Parse fills it from the embedded config when the file has none.
func DefaultConfig() Config {
	return Config{
		Listen:       "127.0.0.1:8080",
		AdminListen:  "127.0.0.1:9090",
		Limits:       Limits{MaxRequestBytes: 262144, MaxResponseBytes: 1048576, MaxInFlight: 2048, MaxBids: 1000, IdleTimeoutMs: 10000},
		Deadline:     Deadline{DefaultTmaxMs: 200, MaxTmaxMs: 1000, ReturnMarginMs: 5, GateReserveMs: 7, MinBidderMs: 10},
		ReloadPollMs: 1000,
		Log:          Log{Level: "info", Format: "text"},
		Shutdown:     Shutdown{DrainMs: 5000},
		Audit:        Audit{FsyncEvery: 64, SegmentBytes: 64 << 20, Queue: 65536},
		Capture:      Capture{MaxBytes: capture.DefaultMaxBytes, MaxFiles: capture.DefaultMaxFiles, Redact: slices.Clone(capture.DefaultRedact)},
		Quarantine: Quarantine{
			Window: Duration{60e9}, BaselineWindow: Duration{3600e9}, Dwell: Duration{30e9}, TTL: Duration{600e9},
			Calm: Duration{120e9}, MinSamples: 100, MaxShare: 0.5,
			ValveWindow: Duration{int64(quarantine.DefaultValveWindow)}, MaxTTL: Duration{int64(quarantine.DefaultMaxTTL)},
			PriceDrop: quarantine.DefaultPriceDrop, MaxSeats: quarantine.DefaultMaxSeats,
			Thresholds: thresholds(quarantine.DefaultThresholds),
		},
		Policy: PolicyConfig{Action: "enforce", OnDeadline: "drop"},
	}
}
