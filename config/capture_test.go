package config_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
)

// The capture block: defaults, every error of one load, the keys read at
// start, and the options converted for the writer.
func TestCaptureBlock(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("capture: {path: cap/auctions.jsonl, sample: 0.01}\n"))
	require.NoError(t, err)
	require.Equal(t, capture.DefaultRedact, cfg.Capture.Redact, "left out: the default set")
	require.Contains(t, cfg.Capture.Redact, "user.ext.eids")
	opt := cfg.CaptureOptions("/etc/bidguard/bidguard.yaml")
	require.Equal(t, capture.Options{Path: "/etc/bidguard/cap/auctions.jsonl", MaxBytes: capture.DefaultMaxBytes,
		MaxFiles: capture.DefaultMaxFiles, Redact: capture.DefaultRedact}, opt)
	require.Equal(t, filepath.Join("cap", "auctions.jsonl"), cfg.CaptureOptions("").Path)
	def := config.DefaultConfig()
	require.Empty(t, def.CaptureOptions("/x.yaml").Path, "no path: off")

	cfg, err = config.Parse("x.yaml", []byte("capture: {path: /a, redact: []}\n"))
	require.NoError(t, err)
	require.Empty(t, cfg.CaptureOptions("").Redact, "an explicit empty list stores identifiers")

	_, err = config.Parse("x.yaml", []byte("capture: {sample: 1.5, maxBytes: 100, maxFiles: 0, redact: [user.id, '', 'a..b']}\n"))
	require.Error(t, err)
	for _, want := range []string{
		"x.yaml: capture.sample: 1.5 is not in [0, 1]",
		"x.yaml: capture.maxBytes: must be at least 4096",
		"x.yaml: capture.maxFiles: must be > 0",
		"x.yaml: capture.redact[1]: empty path",
		`x.yaml: capture.redact[2]: "a..b": empty member name`,
	} {
		require.ErrorContains(t, err, want)
	}
	_, err = config.Parse("x.yaml", []byte("capture: {sample: -0.1}\n"))
	require.ErrorContains(t, err, "capture.sample")
	_, err = config.Parse("x.yaml", []byte("capture: {sample: 0.1}\n"))
	require.ErrorContains(t, err, "x.yaml: capture.sample: set without capture.path")
	_, err = config.Parse("x.yaml", []byte("capture: {queue: 5}\n"))
	require.Error(t, err, "no key for a feature not built")

	old := config.DefaultConfig()
	c := config.DefaultConfig()
	c.Capture.Sample, c.Capture.OnlyRejected = 0.5, true
	require.Empty(t, c.RestartKeys(&old), "sample and onlyRejected follow reloads")
	c.Capture.Path, c.Capture.MaxBytes, c.Capture.MaxFiles, c.Capture.Redact = "p", 5000, 2, []string{"user.id"}
	require.Equal(t, []string{"capture.path", "capture.maxBytes", "capture.maxFiles", "capture.redact"}, c.RestartKeys(&old))
}

// The embedded config shows the capture block with its defaults.
func TestEmbeddedCaptureIsTheDefault(t *testing.T) {
	require.Contains(t, string(configs.Default), "\ncapture:")
	require.Contains(t, string(configs.Default), "  redact: [")
	cfg, err := config.Parse(configs.DefaultName, configs.Default)
	require.NoError(t, err)
	require.Equal(t, config.DefaultConfig().Capture, cfg.Capture)
}
