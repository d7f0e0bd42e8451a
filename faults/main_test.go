package faults

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testserve"
)

// Binary variants TestMain builds on first use.
const (
	binPlain  = "plain"  // go build
	binRace   = "race"   // go build -race: config reloads under traffic
	binInject = "inject" // go build -tags faultinject: injected panics
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserve.RemoveBuilds()
	os.Exit(code)
}

// binary builds (once per run) and returns the path of a variant.
func binary(t testing.TB, variant string) string {
	t.Helper()
	switch p := os.Getenv("BIDGUARD_FAULTS_BIN"); {
	case p != "" && variant == binPlain:
		return p // measure another build (before/after comparisons)
	case variant == binRace:
		return testserve.Build(t, "-race")
	case variant == binInject:
		return testserve.Build(t, "-tags", "faultinject")
	}
	return testserve.Build(t)
}

// slow skips a scenario unless BIDGUARD_FAULTS=1 (make faults).
func slow(t *testing.T) {
	t.Helper()
	if os.Getenv("BIDGUARD_FAULTS") != "1" {
		t.Skip("slow fault scenario: run with BIDGUARD_FAULTS=1 (make faults)")
	}
}

// scenario names the docs/reliability.md row a test proves (see
// TestScenarioList) and logs it.
func scenario(t *testing.T, id string) {
	t.Helper()
	t.Logf("scenario %s", id)
}

// policyYAML is the policy of every fault scenario: the gates that reject
// the fake bidders' bad bids (an impid the request lacks, a negative price).
const policyYAML = `policy:
  gates:
    - gate: tmaxGuard
      options: {bufferMs: 5}
    - gate: impidMatch
    - {gate: bidSanity, options: {maxFloorMultiple: 50}}
`

// procOpts start a serve process.
type procOpts struct {
	variant    string // binPlain when empty
	upstream   string // URL of the bidder, routed at /bid
	upName     string // the upstream's name ("dsp" when empty)
	policy     string // the policy block (policyYAML when empty)
	extra      string // more YAML (limits, deadline, upstreams' keys...)
	configFile string // use this file instead of writing one
	pollMs     int    // reloadPollMs (50 when 0)
	nofile     int    // RLIMIT_NOFILE of the child when > 0
	gomaxprocs int    // GOMAXPROCS of the child when > 0
	cpus       string // the CPUs the child runs on (taskset -c) when not empty
	env        []string
	args       []string
}

// proc is a running `bidguard serve`.
type proc struct {
	*testserve.Proc
	t           *testing.T
	cmd         *exec.Cmd
	addr, admin string
	config      string
	stderr      *testserve.Buffer
	baseline    float64 // go_goroutines once serving
}

// configYAML is a scenario's config file: loopback ports, the bidder at
// /bid, short idle timeouts so that goroutines settle fast.
func configYAML(upstream, extra string) string { return configYAMLWith(upstream, "", "", extra) }

func configYAMLWith(upstream, name, policy, extra string) string {
	var b strings.Builder
	b.WriteString("listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\nreloadPollMs: 50\nshutdown: {drainMs: 0}\n")
	if name == "" {
		name = "dsp"
	}
	if upstream != "" {
		fmt.Fprintf(&b, "upstreams:\n  - {name: %s, url: %q, path: /bid}\n", name, upstream)
	}
	if policy == "" {
		policy = policyYAML
	}
	b.WriteString(policy)
	b.WriteString(extra)
	return b.String()
}

// startProc runs serve and waits for its serving line. The process is
// stopped with SIGTERM when the test ends, and must exit 0 then.
func startProc(t *testing.T, o procOpts) *proc {
	t.Helper()
	if o.variant == "" {
		o.variant = binPlain
	}
	bin := binary(t, o.variant)
	cfg := o.configFile
	if cfg == "" {
		cfg = filepath.Join(t.TempDir(), "bidguard.yaml")
		extra := o.extra
		if !strings.Contains(extra, "limits:") && os.Getenv("BIDGUARD_FAULTS_BIN") == "" {
			extra += "limits: {idleTimeoutMs: 1000}\n"
		}
		yaml := configYAMLWith(o.upstream, o.upName, o.policy, extra)
		if o.pollMs > 0 {
			yaml = strings.Replace(yaml, "reloadPollMs: 50\n", fmt.Sprintf("reloadPollMs: %d\n", o.pollMs), 1)
		}
		require.NoError(t, os.WriteFile(cfg, []byte(yaml), 0o644))
	}
	so := testserve.Options{Bin: bin, Args: append([]string{"--config", cfg}, o.args...), Env: o.env}
	if o.nofile > 0 {
		so.Command = func(argv []string) *exec.Cmd {
			return exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, o.nofile), "sh"}, argv...)...)
		}
	}
	if o.cpus != "" {
		if o.nofile > 0 {
			t.Fatal("procOpts: cpus and nofile do not combine")
		}
		so.Command = func(argv []string) *exec.Cmd {
			return exec.Command("taskset", append([]string{"-c", o.cpus}, argv...)...)
		}
	}
	if o.gomaxprocs > 0 {
		so.Env = append(so.Env, "GOMAXPROCS="+strconv.Itoa(o.gomaxprocs))
	}
	if f := os.Getenv("BIDGUARD_FAULTS_STDERR"); f != "" { // debugging: keep the child's stderr
		fh, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		t.Cleanup(func() { _ = fh.Close() })
		so.Stderr = fh
	}
	sp := testserve.Start(t, so)
	p := &proc{Proc: sp, t: t, cmd: sp.Cmd, addr: sp.Addr, admin: sp.Admin, config: cfg, stderr: sp.Log}
	p.baseline = p.metric("go_goroutines")
	return p
}

func (p *proc) exited() bool { return p.Exited() }

// stop sends SIGTERM and requires exit 0 within 15 s.
func (p *proc) stop() {
	p.t.Helper()
	p.Stop()
}

// metrics returns the admin /metrics text.
func (p *proc) metrics() string {
	p.t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + p.admin + "/metrics")
	require.NoError(p.t, err, "admin listener; stderr: %s", p.stderr.String())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	return string(b)
}

// metric returns one series' value (0 when absent).
func (p *proc) metric(series string) float64 {
	p.t.Helper()
	return metricIn(p.t, p.metrics(), series)
}

func metricIn(t testing.TB, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if name, val, ok := strings.Cut(line, " "); ok && name == series {
			f, err := strconv.ParseFloat(val, 64)
			require.NoError(t, err)
			return f
		}
	}
	return 0
}

// healthy is the check after every scenario: the process is alive and its
// goroutines come back to the baseline (slack: the runtime's and the
// HTTP server's own, which come and go with idle workers).
func (p *proc) healthy() {
	p.t.Helper()
	require.False(p.t, p.exited(), "the process is alive; stderr: %s", p.stderr.String())
	require.NoError(p.t, p.cmd.Process.Signal(syscall.Signal(0)))
	const slack = 8
	var n float64
	require.Eventually(p.t, func() bool {
		n = p.metric("go_goroutines")
		return n <= p.baseline+slack
	}, 20*time.Second, 50*time.Millisecond, "goroutines back to the baseline %v (+%d)", p.baseline, slack)
	p.t.Logf("goroutines: %v (baseline %v)", n, p.baseline)
}
