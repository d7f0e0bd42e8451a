package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/bidguard/bidguard/config"
)

func TestSeatsDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)) }
	require.NoError(t, os.Mkdir(filepath.Join(dir, "seats"), 0o755))
	write("bidguard.yaml", "policy:\n  gates: [{gate: impidMatch}]\nseatsDir: seats\n")
	write("seats/acme.yaml", "seat: acme\naddGates: [{gate: bidSanity, options: {maxPrice: 2}}]\n")
	write("seats/notes.txt", "ignored")
	cfg, data, err := config.LoadFile(filepath.Join(dir, "bidguard.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, data)
	require.Len(t, cfg.Seats["acme"].AddGates, 1)
	require.Equal(t, filepath.Join(dir, "seats", "acme.yaml"), cfg.Seats["acme"].File())
	require.Equal(t, []string{filepath.Join(dir, "seats", "acme.yaml")}, cfg.SeatFiles(filepath.Join(dir, "bidguard.yaml")), "seat files are polled for reload")

	write("seats/bad.yaml", "seat: bad\nbogus: 1\n")
	write("seats/dup.yaml", "seat: acme\n")
	write("seats/anon.yaml", "addGates: []\n")
	_, _, err = config.LoadFile(filepath.Join(dir, "bidguard.yaml"))
	require.Error(t, err)
	for _, m := range []string{`bad.yaml:2: unknown key "bogus"`, `seat "acme" is defined twice`, "anon.yaml: seat: missing"} {
		require.Contains(t, err.Error(), m)
	}
}

func TestEmbeddedDefaultsApplied(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("{}"))
	require.NoError(t, err)
	require.Equal(t, config.Limits{MaxRequestBytes: 262144, MaxResponseBytes: 1048576, MaxInFlight: 2048, MaxBids: 1000, IdleTimeoutMs: 10000}, cfg.Limits)
	require.Equal(t, config.Deadline{DefaultTmaxMs: 200, MaxTmaxMs: 1000, ReturnMarginMs: 5, GateReserveMs: 7, MinBidderMs: 10}, cfg.Deadline)
	require.Equal(t, "drop", cfg.Policy.OnDeadline)
	d := config.DeadlineOverride{MinBidderMs: new(int)}
	*d.MinBidderMs = 20
	require.Equal(t, 20, d.Apply(cfg.Deadline).MinBidderMs)
}

// An explicit zero is not an absent key: where 0 means something it is
// kept, elsewhere it is a config error, never the default.
func TestExplicitZeroIsNotAbsent(t *testing.T) {
	parse := func(yaml string) *config.Config {
		t.Helper()
		cfg, err := config.Parse("x.yaml", []byte(yaml))
		require.NoError(t, err, yaml)
		return cfg
	}
	cfg := parse("deadline: {returnMarginMs: 0}\n")
	require.Equal(t, 0, cfg.Deadline.ReturnMarginMs)

	cfg = parse("deadline: {gateReserveMs: 0}\npolicy:\n  gates: [{gate: impidMatch}]\n")
	require.Equal(t, 0, cfg.Deadline.GateReserveMs, "no reserve when no tmaxGuard needs one (engine checks the tmaxGuard's)")

	cfg = parse("upstreams: [{name: a, url: 'http://127.0.0.1:1/', deadline: {returnMarginMs: 0}}]\n")
	require.Equal(t, 0, cfg.Upstreams[0].Deadline.Apply(cfg.Deadline).ReturnMarginMs)

	cfg = parse("quarantine: {dwell: 0, calm: 0s}\n")
	require.Zero(t, cfg.Quarantine.Dwell.D, "dwell 0: quarantine at once")
	require.Zero(t, cfg.Quarantine.Calm.D, "calm 0: released when ttl ends")

	cfg = parse("{}")
	require.Equal(t, config.DefaultConfig().Deadline, cfg.Deadline, "absent keys take their defaults")
	require.Equal(t, config.DefaultConfig().Quarantine, cfg.Quarantine)

	for key, want := range map[string]string{
		"limits: {maxRequestBytes: 0}":              "limits.maxRequestBytes: must be > 0",
		"limits: {maxResponseBytes: 0}":             "limits.maxResponseBytes: must be > 0",
		"limits: {maxInFlight: 0}":                  "limits.maxInFlight: must be > 0",
		"limits: {maxBids: 0}":                      "limits.maxBids: must be > 0",
		"deadline: {defaultTmaxMs: 0}":              "deadline.defaultTmaxMs: must be > 0",
		"deadline: {maxTmaxMs: 0}":                  "deadline.maxTmaxMs: must be > 0",
		"deadline: {minBidderMs: 0}":                "deadline.minBidderMs: must be > 0",
		"reloadPollMs: 0":                           "reloadPollMs: must be > 0",
		"audit: {fsyncEvery: 0}":                    "audit.fsyncEvery: must be > 0",
		"audit: {queue: 0}":                         "audit.queue: must be > 0",
		"audit: {segmentBytes: 0}":                  "audit.segmentBytes: must be at least 4096",
		"quarantine: {minSamples: 0}":               "quarantine.minSamples: must be > 0",
		"quarantine: {maxShare: 0}":                 "quarantine.maxShare: must be in (0, 1]",
		"quarantine: {window: 0}":                   "quarantine.window: must be > 0",
		"quarantine: {baselineWindow: 0s}":          "quarantine.baselineWindow: must be > 0",
		"quarantine: {ttl: 0}":                      "quarantine.ttl: must be > 0",
		"quarantine: {dwell: -1s}":                  "must not be negative",
		"quarantine: {thresholds: {price: 0}}":      "quarantine.thresholds: price and velocity must be > 0",
		"quarantine: {thresholds: {rejections: 0}}": "quarantine.thresholds.rejections: must be in (0, 1]",
		"seats: {a: {quarantine: {novelty: 0}}}":    `seat "a": quarantine.novelty: must be in (0, 1]`,
		"listen: ''":                                `listen: "" is not host:port`,
		"policy: {action: ''}":                      `policy.action: "" is not enforce or shadow`,
	} {
		_, err := config.Parse("x.yaml", []byte(key+"\n"))
		require.Error(t, err, key)
		require.Contains(t, err.Error(), want, key)
	}
	cfg = parse("seats: {a: {quarantine: {novelty: 0.5}}}\n")
	require.Equal(t, 0.5, cfg.Seats["a"].Quarantine.Apply(cfg.Quarantine.Thresholds).Novelty)
	require.Equal(t, 1.8, cfg.Seats["a"].Quarantine.Apply(cfg.Quarantine.Thresholds).Price, "a key left out inherits")
}

func TestListenerLimits(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("limits: {maxConns: 0, idleTimeoutMs: 2500}\n"))
	require.NoError(t, err)
	require.Zero(t, cfg.Limits.MaxConns, "0: derived at start")
	require.Equal(t, 2500, cfg.Limits.IdleTimeoutMs)
	for _, bad := range []string{"limits: {maxConns: -1}\n", "limits: {idleTimeoutMs: 0}\n"} {
		_, err := config.Parse("x.yaml", []byte(bad))
		require.Error(t, err, bad)
	}
}

// TestConfigErrors: every error of one load is reported, each naming its
// file, line or key.
func TestConfigErrors(t *testing.T) {
	f := func(yaml string, msgs ...string) {
		t.Helper()
		_, err := config.Parse("test.yaml", []byte(yaml))
		require.Error(t, err, yaml)
		for _, m := range msgs {
			require.Contains(t, err.Error(), m)
		}
	}
	f("polcy: {}\n", `test.yaml:1: unknown key "polcy"`)
	f("policy:\n  gates:\n    - {gate: impidMatch, opts: {}}\n", `test.yaml:3: unknown key "opts" in a gate entry`)
	f("policy:\n  action: block\n  onDeadline: later\n", `policy.action: "block"`, `policy.onDeadline: "later"`)
	base := "policy:\n  gates: [{gate: tmaxGuard}, {gate: impidMatch}, {gate: latency, options: {maxMs: 5}}]\nseats:\n"
	f(base+"  a: {gates: [{gate: impidMatch}]}\n", `gates needs replaceGates: true`)
	f(base+"  a: {onDeadline: forward, seatNonBid: true, currencyRates: {EUR/USD: 1}}\n",
		"onDeadline belongs to the default policy only", "seatNonBid belongs", "currencyRates belongs")
	f(base+"  x/a: {}\n", `no upstream named "x"`)
	f("deadline: {maxTmaxMs: 10}\n", "leaves no bidder budget")
	f("upstreams: [{name: a, url: ftp://x}, {name: a, url: 'http://x', path: nope}]\n", `is not an http(s) URL`, `"a" is used twice`, `must start with /`)
}

// A negative returnMarginMs would put D after arrival + T: a config error,
// globally and in an upstream's override.
func TestNegativeReturnMargin(t *testing.T) {
	_, err := config.Parse("x.yaml", []byte("deadline: {returnMarginMs: -1}\n"))
	require.ErrorContains(t, err, "x.yaml: deadline.returnMarginMs: must be >= 0")
	_, err = config.Parse("x.yaml", []byte("upstreams: [{name: a, url: 'http://127.0.0.1:1/', deadline: {returnMarginMs: -1}}]\n"))
	require.ErrorContains(t, err, "x.yaml: upstreams[0].deadline.returnMarginMs: must be >= 0")
}

func TestRestartKeys(t *testing.T) {
	base := func() *config.Config {
		c := config.DefaultConfig()
		return &c
	}
	f := func(change func(c *config.Config), want ...string) {
		t.Helper()
		c := base()
		change(c)
		require.Equal(t, want, c.RestartKeys(base()))
	}
	f(func(c *config.Config) {})
	f(func(c *config.Config) { c.ReloadPollMs = 5; c.Limits.MaxBids = 3; c.SeatsDir = "x" })
	f(func(c *config.Config) { c.Listen = "127.0.0.1:1" }, "listen")
	f(func(c *config.Config) { c.AdminListen = "127.0.0.1:1" }, "adminListen")
	f(func(c *config.Config) { c.Audit.Path = "a.log"; c.Audit.KeyFile = "k" }, "audit.path", "audit.keyFile")
	f(func(c *config.Config) { c.Audit.SegmentBytes = 1; c.Audit.Queue = 1 }, "audit.segmentBytes", "audit.queue")
	f(func(c *config.Config) { c.Audit.FsyncEvery = 1 }, "audit.fsyncEvery")
}

// Every audit key needs a restart (the chain is open): a key added to the
// audit block without a row in the restart table fails here.
func TestEveryAuditKeyNeedsARestart(t *testing.T) {
	typ := reflect.TypeFor[config.Audit]()
	for i := range typ.NumField() {
		c, old := config.DefaultConfig(), config.DefaultConfig()
		f := reflect.ValueOf(&c.Audit).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("changed")
		case reflect.Int, reflect.Int64:
			f.SetInt(f.Int() + 1)
		default:
			t.Fatalf("audit.%s: teach this test its kind %s", typ.Field(i).Name, f.Kind())
		}
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		require.Equal(t, []string{"audit." + name}, c.RestartKeys(&old))
	}
}

// The blocks whose feature has its own settings type are converted here:
// durations, seat overrides over the global thresholds, qualified seat
// keys; audit paths resolved against the config's directory.
func TestFeatureSettings(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte(`
upstreams: [{name: a, url: 'http://127.0.0.1:1/'}]
quarantine: {enabled: true, window: 2m, dwell: 0, thresholds: {price: 3}, seats: [op], valveWindow: 7m, maxTTL: 3h, priceDrop: 0.4, maxSeats: 500}
seats:
  s1: {quarantine: {novelty: 0.25}}
  a/s2: {}
`))
	require.NoError(t, err)
	q := cfg.QuarantineSettings()
	require.True(t, q.Enabled)
	require.Equal(t, 2*time.Minute, q.Window)
	require.Zero(t, q.Dwell)
	require.Equal(t, time.Hour, q.BaselineWindow, "a key left out takes its default")
	require.Equal(t, 7*time.Minute, q.ValveWindow)
	require.Equal(t, 3*time.Hour, q.MaxTTL)
	require.Equal(t, 0.4, q.PriceDrop)
	require.Equal(t, 500, q.MaxSeats)
	require.Equal(t, 3.0, q.Thresholds.Price)
	require.Equal(t, 0.25, q.Overrides["s1"].Novelty)
	require.Equal(t, 3.0, q.Overrides["s1"].Price, "an override inherits the global thresholds")
	require.NotContains(t, q.Overrides, "a/s2", "a seat without a quarantine block has no override")
	require.Equal(t, []string{"a/s2"}, q.Qualified)
	require.Equal(t, []string{"op"}, q.Operator)
	require.Empty(t, q.Validate())

	// The detector's rules are the config's: a value it refuses never loads.
	for key, want := range map[string]string{
		"priceDrop: 1":     "quarantine.priceDrop: must be in (0, 1)",
		"maxSeats: -1":     "quarantine.maxSeats: must be >= 0",
		"valveWindow: -1s": "x.yaml:1: \"-1s\" must not be negative",
		"maxTTL: 1m":       "quarantine.maxTTL: must be >= ttl",
	} {
		_, err := config.Parse("x.yaml", []byte("quarantine: {"+key+"}\n"))
		require.ErrorContains(t, err, want, key)
	}

	opt, err := cfg.AuditOptions("/etc/bidguard/bidguard.yaml")
	require.NoError(t, err)
	require.Empty(t, opt.Path, "audit.path empty: the log is off")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "audit.key"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	cfg, err = config.Parse("x.yaml", []byte("audit: {path: log/audit.log, keyFile: audit.key, fsyncEvery: 8}\n"))
	require.NoError(t, err)
	opt, err = cfg.AuditOptions(filepath.Join(dir, "bidguard.yaml"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "log", "audit.log"), opt.Path)
	require.Equal(t, []byte("0123456789abcdef0123456789abcdef"), opt.Key)
	require.Equal(t, filepath.Join(dir, "audit.key"), opt.KeyFile, "for the warning when others may read it")
	require.Equal(t, 8, opt.FsyncEvery)
	require.Equal(t, int64(64<<20), opt.SegmentBytes)
	require.Equal(t, 65536, opt.Queue)

	cfg.Audit.KeyFile = "missing.key"
	_, err = cfg.AuditOptions(filepath.Join(dir, "bidguard.yaml"))
	require.ErrorContains(t, err, "audit.keyFile: ")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Listen addresses are parsed: host:port with a port in 1-65535 (0: a free
// port, for tests), an IPv6 host in brackets.
func TestListenAddresses(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", ":8080", "[::1]:9", "localhost:65535", "127.0.0.1:0"} {
		_, err := config.Parse("x.yaml", []byte("listen: '"+ok+"'\n"))
		require.NoError(t, err, ok)
	}
	for addr, want := range map[string]string{
		"127.0.0.1:99999": `x.yaml: listen: "127.0.0.1:99999": port 99999 is not in 1-65535`,
		"127.0.0.1":       `x.yaml: listen: "127.0.0.1" is not host:port`,
		"[zz]:80":         `is not host:port`,
		"[fe80::x]:80":    `is not host:port`,
		"127.0.0.1:9090":  `x.yaml: adminListen: "127.0.0.1:9090" is also listen`,
	} {
		_, err := config.Parse("x.yaml", []byte("listen: '"+addr+"'\n"))
		require.ErrorContains(t, err, want, addr)
	}
}

// A value of the wrong type names its key path; the file's other errors
// come with it, and the config is still returned for the checks that need
// the gate registry.
func TestTypeErrorsNameTheKey(t *testing.T) {
	cfg, err := config.Parse("t2.yaml", []byte(`limits:
  maxBids: many
deadline: {maxTmaxMs: [1]}
quarantine: {enabled: maybe}
policy:
  action: block
  currencyRates: {EUR/USD: x}
seats:
  a: {failFast: 3}
upstreams: {name: a}
`))
	require.NotNil(t, cfg)
	for _, want := range []string{
		`t2.yaml:2: limits.maxBids: want an integer, got "many"`,
		`t2.yaml:3: deadline.maxTmaxMs: want an integer, got a list`,
		`t2.yaml:4: quarantine.enabled: want true or false, got "maybe"`,
		`t2.yaml:7: policy.currencyRates.EUR/USD: want a number, got "x"`,
		`t2.yaml:9: seats.a.failFast: want true or false, got "3"`,
		`t2.yaml:10: upstreams: want a list, got a mapping`,
		`policy.action: "block" is not enforce or shadow`,
	} {
		require.ErrorContains(t, err, want)
	}
	require.NotContains(t, err.Error(), "cannot unmarshal", "each type error once, with its key")

	var node yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("maxMs: twenty\nnames: [a, {b: 1}]\n"), &node))
	var opts struct {
		MaxMs float64  `yaml:"maxMs"`
		Names []string `yaml:"names"`
	}
	err = config.DecodeOptions("t2.yaml", func() string { return "policy.gates[2].options" }, node.Content[0], &opts)
	require.EqualError(t, err, `t2.yaml:1: policy.gates[2].options.maxMs: want a number, got "twenty"`+"\n"+
		`t2.yaml:2: policy.gates[2].options.names[1]: want a string, got a mapping`)
	var ke *config.KeyError
	require.ErrorAs(t, err, &ke)
	require.NoError(t, yaml.Unmarshal([]byte("maxMs: 1e3\nnames: [a, 5]\n"), &node))
	require.NoError(t, config.DecodeOptions("t2.yaml", func() string { return "options" }, node.Content[0], &opts), "what yaml decodes is accepted")
	require.Equal(t, 1000.0, opts.MaxMs)
	require.Equal(t, []string{"a", "5"}, opts.Names)
}

func TestShutdownAndLogKeys(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("{}"))
	require.NoError(t, err)
	require.Equal(t, 5000, cfg.Shutdown.DrainMs)
	require.Equal(t, "info", cfg.Log.Level)
	require.Equal(t, "text", cfg.Log.Format)
	cfg, err = config.Parse("x.yaml", []byte("shutdown: {drainMs: 0}\nlog: {level: debug, format: json}\n"))
	require.NoError(t, err)
	require.Zero(t, cfg.Shutdown.DrainMs, "0: stop accepting at once")
	require.Equal(t, "json", cfg.Log.Format)
	_, err = config.Parse("x.yaml", []byte("shutdown: {drainMs: -1}\nlog: {level: loud, format: xml}\n"))
	require.ErrorContains(t, err, "shutdown.drainMs: must be >= 0")
	require.ErrorContains(t, err, `log.level: "loud" is not debug, info, warn or error`)
	require.ErrorContains(t, err, `log.format: "xml" is not text or json`)
}

// KeepRestartKeys keeps the running value of each restart-only key and
// leaves the rest of the new config as it is.
func TestKeepRestartKeys(t *testing.T) {
	running, cur := config.DefaultConfig(), config.DefaultConfig()
	cur.Listen, cur.Audit.Queue, cur.Log.Format, cur.Limits.MaxBids = "127.0.0.1:1", 7, "json", 3
	require.Equal(t, []string{"listen", "audit.queue", "log.format"}, cur.KeepRestartKeys(&running))
	require.Equal(t, running.Listen, cur.Listen)
	require.Equal(t, running.Audit.Queue, cur.Audit.Queue)
	require.Equal(t, "text", cur.Log.Format)
	require.Equal(t, 3, cur.Limits.MaxBids, "the rest applies")
	require.Empty(t, cur.RestartKeys(&running))
}
