package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
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
	require.Equal(t, engine.Limits{MaxRequestBytes: 262144, MaxResponseBytes: 1048576, MaxInFlight: 2048, MaxBids: 1000}, cfg.Limits)
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
