package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestSeatsDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)) }
	require.NoError(t, os.Mkdir(filepath.Join(dir, "seats"), 0o755))
	write("bidguard.yaml", "policy:\n  gates: [{gate: impidMatch}]\nseatsDir: seats\n")
	write("seats/acme.yaml", "seat: acme\naddGates: [{gate: bidSanity, options: {maxPrice: 2}}]\n")
	write("seats/notes.txt", "ignored")
	cfg, data, err := engine.LoadConfigFile(filepath.Join(dir, "bidguard.yaml"))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, filepath.Join(dir, "bidguard.yaml"), data, gates.Builtin())
	require.NoError(t, err)
	require.Len(t, snap.Seats["acme"].Gates, 2)
	require.Contains(t, snap.Files, filepath.Join(dir, "seats", "acme.yaml"), "seat files are polled for reload")

	write("seats/bad.yaml", "seat: bad\nbogus: 1\n")
	write("seats/dup.yaml", "seat: acme\n")
	write("seats/anon.yaml", "addGates: []\n")
	_, _, err = engine.LoadConfigFile(filepath.Join(dir, "bidguard.yaml"))
	require.Error(t, err)
	for _, m := range []string{`bad.yaml:2: unknown key "bogus"`, `seat "acme" is defined twice`, "anon.yaml: seat: missing"} {
		require.Contains(t, err.Error(), m)
	}
}

func TestEmbeddedDefaultsApplied(t *testing.T) {
	cfg, err := engine.ParseConfig("x.yaml", []byte("{}"))
	require.NoError(t, err)
	require.Equal(t, engine.Limits{MaxRequestBytes: 262144, MaxResponseBytes: 1048576, MaxInFlight: 2048, MaxBids: 1000, IdleTimeoutMs: 10000}, cfg.Limits)
	require.Equal(t, engine.Deadline{DefaultTmaxMs: 200, MaxTmaxMs: 1000, ReturnMarginMs: 5, GateReserveMs: 7, MinBidderMs: 10}, cfg.Deadline)
	require.Equal(t, "drop", cfg.Policy.OnDeadline)
	d := engine.DeadlineOverride{MinBidderMs: new(int)}
	*d.MinBidderMs = 20
	require.Equal(t, 20, d.Apply(cfg.Deadline).MinBidderMs)
}

func TestSeatFileInheritsOptionPathsOfTheMainConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	write("schemas/resp.json", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`)
	write("bidguard.yaml", "policy:\n  gates: [{gate: schema, options: {file: schemas/resp.json}}]\nseatsDir: seats\n")
	write("seats/acme.yaml", "seat: acme\nfailFast: false\n")
	cfg, data, err := engine.LoadConfigFile(filepath.Join(dir, "bidguard.yaml"))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, filepath.Join(dir, "bidguard.yaml"), data, gates.Builtin())
	require.NoError(t, err, "the inherited schema path resolves against the main config, not seats/")
	require.Len(t, snap.Seats["acme"].Gates, 1)
}

// A config that leaves out policy.gates (or policy) keeps the embedded
// default policy's gates; `gates: []` is the explicit way to run none.
func TestPolicyWithoutGatesKeepsTheDefaultGates(t *testing.T) {
	names := func(yaml string) []string {
		t.Helper()
		cfg, err := engine.ParseConfig("x.yaml", []byte(yaml))
		require.NoError(t, err, yaml)
		snap, err := engine.Compile(cfg, "x.yaml", []byte(yaml), gates.Builtin())
		require.NoError(t, err, yaml)
		var out []string
		for _, g := range snap.Default.Gates {
			out = append(out, g.Factory+"/"+g.Mode.String())
		}
		return out
	}
	def := names(string(configs.Default))
	require.Greater(t, len(def), 10)
	for _, yaml := range []string{
		"",
		"upstreams: [{name: a, url: 'http://127.0.0.1:9000/bid'}]\n",
		"policy:\n",
		"policy: {action: shadow, failFast: false}\n",
		"policy:\n  gates:\n",
		"policy:\n  gates: ~\n",
	} {
		require.Equal(t, def, names(yaml), "%q runs the default policy's gates", yaml)
	}
	require.Empty(t, names("policy:\n  gates: []\n"))
	require.Equal(t, []string{"impidMatch/enforce"}, names("policy:\n  gates: [{gate: impidMatch}]\n"))

	cfg, err := engine.ParseConfig("x.yaml", []byte("policy: {action: shadow}\n"))
	require.NoError(t, err)
	require.Equal(t, "shadow", cfg.Policy.Action, "the file's other policy keys still apply")
}

// An explicit zero is not an absent key: where 0 means something it is
// kept, elsewhere it is a config error, never the default.
func TestExplicitZeroIsNotAbsent(t *testing.T) {
	parse := func(yaml string) *engine.Config {
		t.Helper()
		cfg, err := engine.ParseConfig("x.yaml", []byte(yaml))
		require.NoError(t, err, yaml)
		return cfg
	}
	cfg := parse("deadline: {returnMarginMs: 0}\n")
	require.Equal(t, 0, cfg.Deadline.ReturnMarginMs)
	arrival := time.Unix(1000, 0)
	_, d := engine.DeadlineFor(cfg.Deadline, 100, arrival)
	require.Equal(t, arrival.Add(100*time.Millisecond), d, "no margin: D is arrival + T")

	cfg = parse("deadline: {gateReserveMs: 0}\npolicy:\n  gates: [{gate: impidMatch}]\n")
	require.Equal(t, 0, cfg.Deadline.GateReserveMs, "no reserve when no tmaxGuard needs one")
	_, err := engine.Compile(cfg, "x.yaml", nil, gates.Builtin())
	require.NoError(t, err)
	require.Contains(t, compileErr(t, "deadline: {gateReserveMs: 0}\n"),
		"deadline.gateReserveMs: 0 must be at least tmaxGuard bufferMs + 1 (6)", "the default policy's tmaxGuard needs a reserve")

	cfg = parse("upstreams: [{name: a, url: 'http://127.0.0.1:1/', deadline: {returnMarginMs: 0}}]\n")
	require.Equal(t, 0, cfg.Upstreams[0].Deadline.Apply(cfg.Deadline).ReturnMarginMs)

	cfg = parse("quarantine: {dwell: 0, calm: 0s}\n")
	require.Zero(t, cfg.Quarantine.Dwell.D, "dwell 0: quarantine at once")
	require.Zero(t, cfg.Quarantine.Calm.D, "calm 0: released when ttl ends")

	cfg = parse("{}")
	require.Equal(t, engine.DefaultConfig().Deadline, cfg.Deadline, "absent keys take their defaults")
	require.Equal(t, engine.DefaultConfig().Quarantine, cfg.Quarantine)

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
		_, err := engine.ParseConfig("x.yaml", []byte(key+"\n"))
		require.Error(t, err, key)
		require.Contains(t, err.Error(), want, key)
	}
	cfg = parse("seats: {a: {quarantine: {novelty: 0.5}}}\n")
	require.Equal(t, 0.5, cfg.Seats["a"].Quarantine.Apply(cfg.Quarantine.Thresholds).Novelty)
	require.Equal(t, 5.0, cfg.Seats["a"].Quarantine.Apply(cfg.Quarantine.Thresholds).Price, "a key left out inherits")
}

// The Kubernetes example runs the default policy: its ConfigMap's file
// names no gates, so it compiles to the embedded policy's gates.
func TestKubernetesExampleRunsTheDefaultPolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "configs", "k8s", "sidecar.yaml"))
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var file string
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc.Kind == "ConfigMap" {
			file = doc.Data["bidguard.yaml"]
		}
	}
	require.NotEmpty(t, file, "the ConfigMap holds bidguard.yaml")
	gateNames := func(name string, data []byte) []string {
		cfg, err := engine.ParseConfig(name, data)
		require.NoError(t, err)
		snap, err := engine.Compile(cfg, name, data, gates.Builtin())
		require.NoError(t, err)
		var out []string
		for _, g := range snap.Default.Gates {
			out = append(out, g.Name+"/"+g.Mode.String())
		}
		return out
	}
	require.Equal(t, gateNames(configs.DefaultName, configs.Default), gateNames("sidecar.yaml", []byte(file)))
}

func TestListenerLimits(t *testing.T) {
	cfg, err := engine.ParseConfig("x.yaml", []byte("limits: {maxConns: 0, idleTimeoutMs: 2500}\n"))
	require.NoError(t, err)
	require.Zero(t, cfg.Limits.MaxConns, "0: derived at start")
	require.Equal(t, 2500, cfg.Limits.IdleTimeoutMs)
	for _, bad := range []string{"limits: {maxConns: -1}\n", "limits: {idleTimeoutMs: 0}\n"} {
		_, err := engine.ParseConfig("x.yaml", []byte(bad))
		require.Error(t, err, bad)
	}
}
