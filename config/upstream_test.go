package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
)

func TestParseUpstreamURL(t *testing.T) {
	bad := func(raw, want string) {
		t.Helper()
		_, err := config.ParseUpstreamURL(raw)
		require.ErrorContains(t, err, want, raw)
	}
	bad("ftp://x", "is not an http(s) URL")
	bad("http://", "is not an http(s) URL")
	bad("http:x", "is not an http(s) URL")
	bad("127.0.0.1:9000", "is not an http(s) URL")
	bad("http://:9000/", "is not an http(s) URL")
	bad("http://x:port/", "is not an http(s) URL")
	bad("http://user:pw@x/", "credentials")
	bad("http://x/#frag", "fragment")
	bad("http://x/\r\nX: y", "is not an http(s) URL")

	good := func(raw string, want config.UpstreamTarget) {
		t.Helper()
		got, err := config.ParseUpstreamURL(raw)
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
	good("https://bidder.example", config.UpstreamTarget{TLS: true, Addr: "bidder.example:443", Host: "bidder.example", ServerName: "bidder.example", RequestURI: "/"})
	good("http://[::1]:9000/p?q=1", config.UpstreamTarget{Addr: "[::1]:9000", Host: "[::1]:9000", ServerName: "::1", RequestURI: "/p?q=1"})
	good("http://127.0.0.1/a%20b/c d", config.UpstreamTarget{Addr: "127.0.0.1:80", Host: "127.0.0.1", ServerName: "127.0.0.1", RequestURI: "/a%20b/c%20d"})
}

// TestUpstreamKeys: idleTimeoutMs (absent: 4000; an explicit 0 means no
// keep-alive), onError and log.rejectionsPerSecond are validated where every
// config is, so `config validate` and `serve` agree.
func TestUpstreamKeys(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte("upstreams:\n  - {name: a, url: 'http://127.0.0.1:1/'}\n  - {name: b, url: 'http://127.0.0.1:1/', path: /b, idleTimeoutMs: 0, onError: status}\n"))
	require.NoError(t, err)
	a, b := cfg.Upstreams[0], cfg.Upstreams[1]
	require.Equal(t, 4*time.Second, a.IdleTimeout())
	require.False(t, a.StatusOnError())
	require.Equal(t, config.OnErrorNoBid, a.OnError)
	require.Zero(t, b.IdleTimeout())
	require.True(t, b.StatusOnError())
	require.Equal(t, 10, cfg.Log.RejectionRate())
	require.Equal(t, 4*time.Second, config.Upstream{}.IdleTimeout(), "an upstream built by a flag has the default")

	cfg, err = config.Parse("t.yaml", []byte("log: {rejectionsPerSecond: 0}\n"))
	require.NoError(t, err)
	require.Zero(t, cfg.Log.RejectionRate(), "an explicit 0 turns the log off")

	_, err = config.Parse("t.yaml", []byte("upstreams:\n  - {name: a, url: 'http://u:p@127.0.0.1:1/', idleTimeoutMs: -1, onError: 502}\nlog: {rejectionsPerSecond: -1}\n"))
	require.Error(t, err)
	for _, want := range []string{`upstreams[0].url: "http://u:p@127.0.0.1:1/": credentials`, "upstreams[0].idleTimeoutMs: must be >= 0",
		`upstreams[0].onError: "502" is not nobid or status`, "log.rejectionsPerSecond: must be >= 0"} {
		require.ErrorContains(t, err, want)
	}
}
