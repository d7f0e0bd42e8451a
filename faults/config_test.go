package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// brokenConfigs: each must stop startup (exit 1, nothing listens) and be
// refused by a reload (the old config stays), with the problem reported.
var brokenConfigs = map[string]struct{ yaml, says string }{
	"syntax error":     {"listen: 127.0.0.1:0\npolicy: {gates: [\n", "bidguard.yaml"},
	"tab indentation":  {"listen: 127.0.0.1:0\npolicy:\n\tgates: []\n", "bidguard.yaml"},
	"unknown key":      {"listen: 127.0.0.1:0\nlimitz: {}\n", "limitz"},
	"unknown gate":     {"listen: 127.0.0.1:0\npolicy: {gates: [{gate: nope}]}\n", "nope"},
	"negative limit":   {"listen: 127.0.0.1:0\nlimits: {maxInFlight: -1}\n", "maxInFlight"},
	"wrong type":       {"listen: 127.0.0.1:0\nlimits: {maxBids: many}\n", "bidguard.yaml:2"},
	"bad upstream URL": {"listen: 127.0.0.1:0\nupstreams: [{name: x, url: 'ftp://x/', path: /}]\n", "url"},
	"bad action":       {"listen: 127.0.0.1:0\npolicy: {action: maybe}\n", "action"},
	"empty file":       {"", ""},
}

func TestConfigStartupErrors(t *testing.T) {
	scenario(t, "config/startup-errors")
	bin := binary(t, binPlain)
	for name, tc := range brokenConfigs {
		if tc.yaml == "" {
			continue // an empty file is the defaults: valid
		}
		path := filepath.Join(t.TempDir(), "bidguard.yaml")
		require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o644))
		cmd := exec.Command(bin, "serve", "--config", path)
		out, err := cmd.Output()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, name)
		require.Equal(t, 1, ee.ExitCode(), name)
		require.Empty(t, out, "%s: nothing listened", name)
		require.Contains(t, string(ee.Stderr), tc.says, name)
	}
}

func TestConfigReloadErrors(t *testing.T) {
	scenario(t, "config/reload-errors")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid"})
	good, err := os.ReadFile(p.config)
	require.NoError(t, err)
	a, _ := post(t, p.addr, bidRequest("r", 500))
	require.Equal(t, 200, a.status)
	version := a.header["x-bidguard-config"]
	errs := 0.0
	for name, tc := range brokenConfigs {
		if tc.yaml == "" {
			continue
		}
		// A broken edit of the running config: the old one stays.
		broken := string(good) + "\n" + strings.TrimPrefix(tc.yaml, "listen: 127.0.0.1:0\n")
		if name == "syntax error" || name == "tab indentation" {
			broken = tc.yaml
		}
		writeAtomic(t, p.config, broken)
		errs++
		require.Eventually(t, func() bool {
			return p.metric(`bidguard_config_reloads_total{result="error"}`) >= errs
		}, 10*time.Second, 20*time.Millisecond, "%s: reload refused; stderr: %s", name, p.stderr.String())
		require.Zero(t, p.metric("bidguard_config_last_reload_successful"), name)
		a, _ := post(t, p.addr, bidRequest("r", 500))
		require.Equal(t, 200, a.status, name)
		require.Equal(t, version, a.header["x-bidguard-config"], "%s: the old config serves", name)
		checkAnswer(t, a)
	}
	require.Zero(t, p.metric(`bidguard_config_reloads_total{result="success"}`))
	p.healthy()
}

// writeAtomic replaces a file by rename, as careful deploy tools do.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// TestConfigHalfWritten: a config written in place in two halves, the first
// half a valid config of its own (no gates after impidMatch), is never
// loaded half: only content stable over two polls (300 ms) is.
func TestConfigHalfWritten(t *testing.T) {
	scenario(t, "config/half-written")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{upstream: b.URL + "/bid", pollMs: 300})
	full, err := os.ReadFile(p.config)
	require.NoError(t, err)
	cut := strings.Index(string(full), "    - {gate: bidSanity")
	require.Positive(t, cut)
	for i := range 3 {
		// The second half changes a value so that every round is a change.
		next := strings.Replace(string(full), "maxFloorMultiple: 50", "maxFloorMultiple: "+strconv.Itoa(10+i), 1)
		f, err := os.OpenFile(p.config, os.O_WRONLY|os.O_TRUNC, 0)
		require.NoError(t, err)
		_, err = f.WriteString(next[:cut])
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond) // well under one poll interval
		_, err = f.WriteString(next[cut:])
		require.NoError(t, err)
		require.NoError(t, f.Close())
		want := float64(i + 1)
		require.Eventually(t, func() bool {
			return p.metric(`bidguard_config_reloads_total{result="success"}`) >= want
		}, 10*time.Second, 20*time.Millisecond, "round %d", i)
		time.Sleep(700 * time.Millisecond) // two more polls
		require.Equal(t, want, p.metric(`bidguard_config_reloads_total{result="success"}`), "round %d: one reload, of the whole file", i)
	}
	require.Zero(t, p.metric(`bidguard_config_reloads_total{result="error"}`))
	require.NotContains(t, p.stderr.String(), "bidSanity\" is not", "the half file was never compiled")
	p.healthy()
}

// TestConfigReloadStorm: 1,000 reloads (SIGHUP after each write) under
// traffic, with a race-built binary: no data race, every answer on time
// (race-built code is slower: tmax 1000), no rejected bid served.
func TestConfigReloadStorm(t *testing.T) {
	slow(t)
	scenario(t, "config/reload-storm")
	b := goodBidder(t, 0)
	p := startProc(t, procOpts{variant: binRace, upstream: b.URL + "/bid"})
	full, err := os.ReadFile(p.config)
	require.NoError(t, err)
	done := make(chan loadResult, 1)
	go func() {
		done <- runLoad(t, loadSpec{addr: p.addr, conns: 16, rate: 200, dur: 20 * time.Second, tmaxMs: 1000})
	}()
	const reloads = 1000
	start := time.Now()
	for i := range reloads {
		next := strings.Replace(string(full), "maxFloorMultiple: 50", "maxFloorMultiple: "+strconv.Itoa(10+i), 1)
		writeAtomic(t, p.config, next)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
		want := float64(i + 1)
		require.Eventually(t, func() bool {
			return p.metric(`bidguard_config_reloads_total{result="success"}`) >= want
		}, 10*time.Second, 2*time.Millisecond, "reload %d", i)
	}
	t.Logf("%d reloads in %v", reloads, time.Since(start))
	res := <-done
	t.Logf("traffic during the reloads: %s", res)
	require.Zero(t, res.errors)
	require.LessOrEqual(t, res.lateShare(), 0.01)
	require.NotContains(t, p.stderr.String(), "DATA RACE")
	require.Zero(t, p.metric(`bidguard_config_reloads_total{result="error"}`))
	p.healthy()
}
