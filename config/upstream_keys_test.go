package config_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
)

// TestUpstreamRequestKeys: the headers, forwardQuery, tls, breaker and
// compressAbove keys: defaults, values resolved against the config file's
// directory, and the files polled for reload.
func TestUpstreamRequestKeys(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.txt"), []byte("s3cret\r\n"), 0o600))
	t.Setenv("BIDGUARD_TEST_TOKEN", "t0ken")
	yaml := `
upstreams:
  - name: a
    url: http://a/bid
  - name: b
    url: http://b/bid?x=1
    path: /b
    forwardQuery: false
    headers:
      set: {X-Key: "${file:key.txt}", X-Token: "${env:BIDGUARD_TEST_TOKEN}", X-Fixed: "a b"}
      remove: [Cookie]
      maxCount: 0
    breaker: {failures: 0, openMs: 50, successes: 1}
    compressAbove: 2048
`
	path := filepath.Join(dir, "bidguard.yaml")
	cfg, err := config.Parse(path, []byte(strings.Replace(yaml, "maxCount: 0", "maxCount: 5", 1)))
	require.NoError(t, err)
	a, b := cfg.Upstreams[0], cfg.Upstreams[1]
	require.True(t, a.QueryForwarded())
	require.Equal(t, config.DefaultMaxHeaders, a.Headers.MaxHeaders())
	require.Equal(t, config.DefaultMaxHeaderBytes, a.Headers.MaxHeaderBytes())
	require.Equal(t, config.DefaultBreakerFailures, a.Breaker.BreakerFailures())
	require.Equal(t, config.DefaultBreakerOpenMs, a.Breaker.BreakerOpenMs())
	require.Equal(t, config.DefaultBreakerSuccesses, a.Breaker.BreakerSuccesses())
	require.Zero(t, a.CompressAbove)
	require.Empty(t, a.SetHeaders())

	require.False(t, b.QueryForwarded())
	require.Equal(t, 5, b.Headers.MaxHeaders())
	require.Equal(t, 0, b.Breaker.BreakerFailures(), "0: no breaker")
	require.Equal(t, []config.Header{{Name: "X-Fixed", Value: "a b"}, {Name: "X-Key", Value: "s3cret"}, {Name: "X-Token", Value: "t0ken"}}, b.SetHeaders())
	require.Equal(t, []string{filepath.Join(dir, "key.txt")}, cfg.UpstreamFiles())

	_, err = config.Parse(path, []byte(yaml))
	require.ErrorContains(t, err, "upstreams[1].headers.maxCount: must be > 0")
}

func TestUpstreamTLSKeys(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte("upstreams:\n  - {name: a, url: \"https://a/\", tls: {minVersion: \"1.3\", serverName: bidder.internal}}\n"))
	require.NoError(t, err)
	u := cfg.Upstreams[0]
	require.Equal(t, uint16(tls.VersionTLS13), u.TLS.TLSMinVersion())
	require.Equal(t, uint16(tls.VersionTLS12), config.UpstreamTLS{}.TLSMinVersion())
	ca, cert, key := u.TLSFiles()
	require.Equal(t, [3]string{}, [3]string{ca, cert, key})
	u.TLS.CAFile = "ca.pem"
	ca, _, _ = u.TLSFiles()
	require.Equal(t, filepath.Join(dir, "ca.pem"), ca, "relative to the config file")
}

// TestUpstreamKeyErrors: every bad key of one load is reported, and a
// resolved header value never appears in an error.
func TestUpstreamKeyErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("top\nsecret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notpem"), []byte("hello"), 0o600))
	yaml := `
upstreams:
  - name: a
    url: http://a/
    tls: {caFile: ca.pem}
    headers:
      set: {Host: x, Connection: x, X-Forwarded-For: x, "Bad Name": x, X-Env: "${env:BIDGUARD_TEST_UNSET}", X-File: "${file:missing}", X-Bad: "${file:bad.txt}", X-Rem: x, X-Ctl: "a\tb\u0001", X-Ref: "${vault:x}"}
      remove: [x-rem, "no good"]
      maxBytes: -1
    breaker: {failures: -1, openMs: 0, successes: 0}
    compressAbove: -1
  - name: b
    url: https://b/
    tls: {certFile: c.pem, minVersion: "1.1", serverName: "a b", caFile: notpem}
  - name: c
    url: https://c/
    tls: {certFile: notpem, keyFile: notpem}
`
	_, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte(yaml))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"upstreams[0].tls: only for an https:// url",
		`upstreams[0].headers.set: "Host" is written by bidguard or hop-by-hop`,
		`upstreams[0].headers.set: "Connection" is written by bidguard or hop-by-hop`,
		`upstreams[0].headers.set: "X-Forwarded-For" is written by bidguard or hop-by-hop`,
		`upstreams[0].headers.set: "Bad Name" is not a header name`,
		`upstreams[0].headers.set.X-Env: environment variable "BIDGUARD_TEST_UNSET" is not set`,
		`upstreams[0].headers.set.X-File: open ` + filepath.Join(dir, "missing"),
		`upstreams[0].headers.set.X-Bad: the value has a control character or non-ASCII byte`,
		`upstreams[0].headers.set.X-Ctl: the value has a control character or non-ASCII byte`,
		`upstreams[0].headers.set.X-Ref: "${vault:...}" is neither ${env:NAME} nor ${file:PATH}`,
		`upstreams[0].headers.set: "X-Rem" is also in remove`,
		`upstreams[0].headers.remove: "no good" is not a header name`,
		"upstreams[0].headers.maxBytes: must be > 0",
		"upstreams[0].breaker.failures: must be >= 0",
		"upstreams[0].breaker.openMs: must be > 0",
		"upstreams[0].breaker.successes: must be > 0",
		"upstreams[0].compressAbove: must be >= 0",
		`upstreams[1].tls.minVersion: "1.1" is not 1.2 or 1.3`,
		"upstreams[1].tls: certFile and keyFile go together",
		`upstreams[1].tls.serverName: "a b" is not a host name`,
		"upstreams[1].tls.caFile: " + filepath.Join(dir, "notpem") + ": no PEM certificate",
		"upstreams[2].tls.certFile: tls: failed to find any PEM data in certificate input",
	} {
		require.Contains(t, msg, want)
	}
	require.NotContains(t, msg, "secret", "a file's value is never in an error")
}

// The errors of headers.set read the same on every load, in name order: of
// two names alike but for case, the later in that order is the one given
// twice (a map's order would pick either, load by load).
func TestHeadersSetErrorsInNameOrder(t *testing.T) {
	yaml := `upstreams:
  - name: a
    url: http://a/
    headers:
      set: {x-dup: "1", X-Dup: "2", "Bad Name": x, Host: x, "Also Bad": x, X-Ok: fine}
`
	want := strings.Join([]string{
		`x.yaml: upstreams[0].headers.set: "Also Bad" is not a header name`,
		`x.yaml: upstreams[0].headers.set: "Bad Name" is not a header name`,
		`x.yaml: upstreams[0].headers.set: "Host" is written by bidguard or hop-by-hop`,
		`x.yaml: upstreams[0].headers.set: "x-dup" is given twice (names are case-insensitive)`,
	}, "\n")
	for range 20 {
		_, err := config.Parse("x.yaml", []byte(yaml))
		require.EqualError(t, err, want)
	}
}
