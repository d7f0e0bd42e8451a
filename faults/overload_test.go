package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// overloadTmax is the tmax of the overload scenarios (ms).
const overloadTmax = 200

// TestOverload: at twice the saturation rate, over many connections and
// over few pipelined ones, admitted requests are answered by their
// deadline and the excess gets an immediate 204.
func TestOverload(t *testing.T) {
	slow(t)
	for _, tc := range []struct {
		id       string
		conns    int
		pipeline bool
	}{
		{"overload/many-connections", 512, false},
		{"overload/pipelined", 16, true},
	} {
		t.Run(tc.id, func(t *testing.T) {
			scenario(t, tc.id)
			b := goodBidder(t, 10*time.Millisecond)
			p := startProc(t, procOpts{upstream: b.URL + "/bid"})
			// Saturation: closed-loop clients on as many connections as the
			// load uses (at least 64), each sending as soon as its answer came.
			satConns := max(tc.conns, 64)
			sat := saturation(t, p.addr, satConns, 3*time.Second, overloadTmax)
			t.Logf("saturation: %.0f answers/s over %d connections", sat, satConns)
			before := p.metrics()
			res := runLoad(t, loadSpec{addr: p.addr, conns: tc.conns, rate: 2 * sat, dur: 5 * time.Second,
				tmaxMs: overloadTmax, pipeline: tc.pipeline})
			m := p.metrics()
			delta := func(series string) float64 { return metricIn(t, m, series) - metricIn(t, before, series) }
			budget, inflight, queue := delta(`bidguard_shed_total{reason="budget"}`), delta(`bidguard_shed_total{reason="inflight"}`),
				delta(`bidguard_shed_total{reason="queue"}`)
			shed := budget + inflight + queue
			t.Logf("shed during the load: budget %.0f, inflight %.0f, queue %.0f; upstream timeouts %.0f", budget, inflight, queue,
				delta(`bidguard_upstream_errors_total{upstream="dsp",kind="timeout"}`))
			t.Logf("2x saturation (%.0f/s) over %d connections (pipelined %v): %s; shed %.0f (%.1f%% of answers)",
				2*sat, tc.conns, tc.pipeline, res, shed, 100*shed/float64(max(res.answered, 1)))
			require.Zero(t, res.errors, "every request answered")
			require.LessOrEqual(t, res.lateShare(), 0.01, "answers by the deadline (+%v)", deadlineTolerance)
			p.healthy()
		})
	}
}

// TestCPUStarvation: GOMAXPROCS=1 and a goroutine spinning beside the bid
// path (faultinject binary): answers are still on time, shedding what the
// one starved core cannot serve.
func TestCPUStarvation(t *testing.T) {
	slow(t)
	scenario(t, "overload/cpu-starvation")
	b := goodBidder(t, 5*time.Millisecond)
	p := startProc(t, procOpts{variant: binInject, upstream: b.URL + "/bid", gomaxprocs: 1,
		env: []string{"BIDGUARD_FAULTINJECT_BUSY=1"}})
	res := runLoad(t, loadSpec{addr: p.addr, conns: 256, rate: 1000, dur: 5 * time.Second, tmaxMs: overloadTmax})
	shed := p.metric(`bidguard_shed_total{reason="budget"}`) + p.metric(`bidguard_shed_total{reason="inflight"}`) +
		p.metric(`bidguard_shed_total{reason="queue"}`)
	t.Logf("GOMAXPROCS=1 with a busy goroutine: %s; shed %.0f", res, shed)
	require.Zero(t, res.errors)
	require.LessOrEqual(t, res.lateShare(), 0.01, "answers by the deadline (+%v)", deadlineTolerance)
	p.healthy()
}
