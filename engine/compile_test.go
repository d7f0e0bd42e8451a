package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Compiling a config: the policies its gate entries and seats build. What
// config.Parse checks alone is tested in package config.

func TestSeatsDirCompiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)) }
	require.NoError(t, os.Mkdir(filepath.Join(dir, "seats"), 0o755))
	write("bidguard.yaml", "policy:\n  gates: [{gate: impidMatch}]\nseatsDir: seats\n")
	write("seats/acme.yaml", "seat: acme\naddGates: [{gate: bidSanity, options: {maxPrice: 2}}]\n")
	cfg, data, err := config.LoadFile(filepath.Join(dir, "bidguard.yaml"))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, filepath.Join(dir, "bidguard.yaml"), data, gates.Builtin())
	require.NoError(t, err)
	require.Len(t, snap.Seats["acme"].Gates, 2)
	require.Contains(t, snap.Files, filepath.Join(dir, "seats", "acme.yaml"), "seat files are polled for reload")
}

// A gate's options block is a mapping: a scalar fails the load, whether the
// gate takes options or not.
func TestScalarGateOptionsFailTheLoad(t *testing.T) {
	require.Contains(t, compileErr(t, "policy:\n  gates:\n    - {gate: bidSanity, options: 5}\n"),
		"test.yaml:3: policy.gates[0] (bidSanity): options: test.yaml:3: expected a mapping")
	require.Contains(t, compileErr(t, "policy:\n  gates:\n    - {gate: impidMatch, options: 5}\n"),
		"impidMatch takes no options")
	require.Contains(t, compileErr(t, "policy:\n  gates: [{gate: impidMatch}]\nseats:\n  a: {gateOptions: {rtb.impid-match: {options: [1]}}}\n"),
		"impidMatch takes no options")
}

// Zero gateReserveMs is valid on its own (no reserve) but not with a
// tmaxGuard, which needs bufferMs + 1.
func TestGateReserveNeedsTmaxGuardsBuffer(t *testing.T) {
	text := "deadline: {gateReserveMs: 0}\npolicy:\n  gates: [{gate: impidMatch}]\n"
	cfg, err := config.Parse("x.yaml", []byte(text))
	require.NoError(t, err)
	_, err = engine.Compile(cfg, "x.yaml", nil, gates.Builtin())
	require.NoError(t, err)
	require.Contains(t, compileErr(t, "deadline: {gateReserveMs: 0}\n"),
		"deadline.gateReserveMs: 0 must be at least tmaxGuard bufferMs + 1 (6)", "the default policy's tmaxGuard needs a reserve")
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
	cfg, data, err := config.LoadFile(filepath.Join(dir, "bidguard.yaml"))
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
		cfg, err := config.Parse("x.yaml", []byte(yaml))
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

	cfg, err := config.Parse("x.yaml", []byte("policy: {action: shadow}\n"))
	require.NoError(t, err)
	require.Equal(t, "shadow", cfg.Policy.Action, "the file's other policy keys still apply")
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
		cfg, err := config.Parse(name, data)
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

// returnMarginMs: 0 answers right at T.
func TestZeroReturnMargin(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("deadline: {returnMarginMs: 0}\n"))
	require.NoError(t, err)
	arrival := time.Unix(1000, 0)
	_, d := engine.DeadlineFor(cfg.Deadline, 100, arrival)
	require.Equal(t, arrival.Add(100*time.Millisecond), d, "no margin: D is arrival + T")
}

// A wrong type in a gate's options names its key path as the file spells
// it: policy.gates[i], seats.<key>.addGates[i] and .gateOptions.<name> in
// the config, addGates[i] at the top of a seat file.
func TestOptionTypeErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "seats"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seats", "b.yaml"), []byte("seat: b\naddGates: [{gate: latency, options: {maxMs: z}}]\n"), 0o644))
	path := filepath.Join(dir, "bidguard.yaml")
	data := []byte(`seatsDir: seats
policy:
  gates:
    - {gate: impidMatch}
    - {gate: bidSanity, options: {maxPrice: 10}}
    - gate: latency
      options: {maxMs: twenty}
seats:
  a:
    addGates: [{gate: latency, name: l2, options: {maxMs: x}}]
    gateOptions: {rtb.bid-sanity: {options: {maxPrice: y}}}
`)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	cfg, data, err := config.LoadFile(path)
	require.NoError(t, err)
	_, err = engine.Compile(cfg, path, data, gates.Builtin())
	for _, want := range []string{
		path + `:7: policy.gates[2].options.maxMs: want a number, got "twenty"`,
		path + `:10: seats.a.addGates[0].options.maxMs: want a number, got "x"`,
		path + `:11: seats.a.gateOptions.rtb.bid-sanity.options.maxPrice: want a number, got "y"`,
		filepath.Join(dir, "seats", "b.yaml") + `:2: addGates[0].options.maxMs: want a number, got "z"`,
	} {
		require.ErrorContains(t, err, want)
	}
	var ke *config.KeyError
	require.ErrorAs(t, err, &ke)
}
