package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// TestServeReloadHeaderSecret: a headers.set value read from a file is
// read again when the file changes (the file is polled with the config),
// and the config version, which the exchange sees, does not hash it.
func TestServeReloadHeaderSecret(t *testing.T) {
	b := testbidder.HTTP(t, testbidder.Answer(200, []byte(reloadBid)))
	last := func() string { return b.Last(t).Get(t, "Authorization") }

	cfg := reloadServeConfig("20", "10") + "upstreams:\n  - {name: dsp, url: \"" + b.URL + "/bid\", headers: {set: {Authorization: \"${file:token}\"}}}\n"
	path := reloadConfigDir(t, cfg)
	token := filepath.Join(filepath.Dir(path), "token")
	writeAtomic(t, token, "Bearer one\n")
	s := startServe(t, path, "")
	code, _, v1 := bid(t, s.addr)
	require.Equal(t, 200, code)
	require.Equal(t, "Bearer one", last())

	writeAtomic(t, token, "Bearer two\n")
	waitMetrics(t, s, [4]float64{1, 0, 0, 1})
	code, _, v2 := bid(t, s.addr)
	require.Equal(t, 200, code)
	require.Equal(t, "Bearer two", last())
	require.Equal(t, v1, v2, "the secret is not part of the version")
	require.NotContains(t, s.stderr.String(), "Bearer", "the secret is never logged")
}
