package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeReloadHeaderSecret: a headers.set value read from a file is
// read again when the file changes (the file is polled with the config),
// and the config version, which the exchange sees, does not hash it.
func TestServeReloadHeaderSecret(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reloadBid)
	}))
	t.Cleanup(b.Close)
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, seen)
		return seen[len(seen)-1]
	}

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
