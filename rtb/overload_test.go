package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

func TestGovernorAdjust(t *testing.T) {
	g := newGovernor()
	require.Equal(t, 2048, g.effective(2048), "unconstrained at start")

	// A busy CPU whose answers leave in time is no reason to shed: 1% of
	// the answers tight is not overload, nor is a tick with few answers.
	g.adjust(1000, 10, 100, 2048, 0)
	require.Equal(t, 2048, g.effective(2048))
	g.adjust(minAnswers-1, minAnswers-1, 100, 2048, 0)
	require.Equal(t, 2048, g.effective(2048))

	// Overload (answers leaving with under tightSlack to spare): 3/4 of the
	// requests in flight.
	g.adjust(1000, 11, 100, 2048, 0)
	require.Equal(t, 75, g.effective(2048))
	// Still overloaded with fewer in flight: follows them down, not below the floor.
	g.adjust(1000, 500, 40, 2048, 0)
	require.Equal(t, 30, g.effective(2048))
	for range 20 {
		g.adjust(100, 100, 0, 2048, 0)
	}
	require.Equal(t, governorFloor, g.effective(2048))

	// Calm: it grows by 1/4 (at least 1) per tick while the queue is under
	// half its target, by 1/8 up to it.
	g.adjust(100, 0, 4, 2048, 0)
	require.Equal(t, governorFloor+1, g.effective(2048))
	g.limit.Store(80)
	g.adjust(100, 0, 4, 2048, queueTarget/4)
	require.Equal(t, 100, g.effective(2048))
	g.adjust(100, 0, 4, 2048, queueTarget*3/4)
	require.Equal(t, 112, g.effective(2048))
	// Growing past the ceiling lifts the constraint; a lower configured
	// limit always wins.
	g.limit.Store(1900)
	g.adjust(100, 0, 1900, 2048, 0)
	require.Equal(t, 2048, g.effective(2048))
	require.EqualValues(t, 0, g.limit.Load())
	g.limit.Store(500)
	require.Equal(t, 100, g.effective(100))
}

func TestGovernorQueue(t *testing.T) {
	g := newGovernor()
	// A queue up to the target sheds nothing, however busy.
	g.adjust(1000, 0, 500, 2048, queueTarget)
	g.adjust(1000, 0, 500, 2048, queueTarget)
	require.Equal(t, 2048, g.effective(2048))
	// One tick over it is not an overload (a process not run for a while
	// sees one long tick): neither a cut nor growth.
	g.adjust(1000, 0, 500, 2048, queueTarget*3)
	require.Equal(t, 2048, g.effective(2048))
	g.adjust(1000, 0, 500, 2048, queueTarget/2)
	g.adjust(1000, 0, 500, 2048, queueTarget*3)
	require.Equal(t, 2048, g.effective(2048), "the ticks over target must follow each other")
	// Two: the lower of the limit and the requests in flight, scaled by
	// target/queue.
	g.adjust(1000, 0, 200, 2048, queueTarget*1.25)
	require.Equal(t, 160, g.effective(2048))
	g.adjust(1000, 0, 300, 2048, queueTarget*1.6)
	require.Equal(t, 100, g.effective(2048), "the limit, not the requests in flight, when lower")
	// At most by half a tick.
	g.adjust(1000, 0, 100, 2048, queueTarget*10)
	require.Equal(t, 50, g.effective(2048))
	// Tight answers and a queue just over target: the stronger cut wins.
	g.adjust(1000, 100, 100, 2048, queueTarget*1.1)
	require.Equal(t, 37, g.effective(2048))
	// Few answers in the tick do not stop the queue signal: a tick of
	// sheds only still counts its requests' time.
	g.adjust(0, 0, 100, 2048, queueTarget*2)
	require.Equal(t, 18, g.effective(2048))
	// Back under target: grows.
	g.adjust(1000, 0, 18, 2048, queueTarget/4)
	require.Equal(t, 22, g.effective(2048))
	// Over target once more: holds (neither cut nor growth).
	g.adjust(1000, 0, 22, 2048, queueTarget*2)
	require.Equal(t, 22, g.effective(2048))
}

// TestGovernorIgnoresBursts: a slow bidder's answers arrive in waves, and
// each wave makes a burst of queue over the target for a tick or two; the
// mean over queueWindow ticks stays under it, so nothing is cut. A queue
// that stays over the target is cut once the mean reaches it.
func TestGovernorIgnoresBursts(t *testing.T) {
	g := newGovernor()
	for wave := 0; wave < 20; wave++ {
		for _, q := range []float64{queueTarget * 1.6, queueTarget * 1.6, 5, 5} {
			g.adjust(1000, 0, 256, 2048, q)
			require.Equal(t, 2048, g.effective(2048), "wave %d: a burst is not an overload", wave)
		}
	}
	// A queue just over target, sustained: held, then cut when the window's
	// mean is over target too (with the wave's last ticks in the window, the
	// fourth).
	for i := 0; i < 3; i++ {
		g.adjust(1000, 0, 256, 2048, queueTarget*1.5)
		require.Equal(t, 2048, g.effective(2048), "tick %d: the window's mean is under target", i)
	}
	g.adjust(1000, 0, 256, 2048, queueTarget*1.5)
	require.Equal(t, 170, g.effective(2048), "sustained: 256 scaled by 1/1.5")
}

// TestOwnTimeExcludesTheBidder: the queue counts bidguard's own time of
// every answered request, not the time the bidder takes.
func TestOwnTimeExcludesTheBidder(t *testing.T) {
	const bidderTime = 100 * time.Millisecond
	h := &engine.Holder{}
	b := testbidder.HTTP(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(bidderTime)
		w.WriteHeader(http.StatusNoContent)
	})
	h.Store(compile(t, fmt.Sprintf(baseConfig, b.URL+"/bid"), nil))
	srv, err := New(h, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	// The handler alone (no Serve): the governor's goroutine does not run,
	// so its counters hold what the requests recorded.
	for range 3 {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/bid")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBody(withTmax(t, 1000))
		start := time.Now()
		srv.Handler()(&ctx)
		took := time.Since(start)
		require.Equal(t, fasthttp.StatusNoContent, ctx.Response.StatusCode())
		require.GreaterOrEqual(t, took, bidderTime)
		own := time.Duration(srv.gov.own.Swap(0))
		require.Positive(t, own)
		require.Less(t, own, took-bidderTime+time.Millisecond, "the bidder's time is not bidguard's")
	}
	require.EqualValues(t, 3, srv.gov.answers.Load())
	// A shed counts its whole time.
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/bid")
	ctx.Request.SetBody(withTmax(t, 10))
	srv.Handler()(&ctx)
	require.Equal(t, fasthttp.StatusNoContent, ctx.Response.StatusCode())
	require.Positive(t, srv.gov.own.Load())
}

func TestGovernorCountsTightAnswers(t *testing.T) {
	g := newGovernor()
	g.answered(5 * time.Millisecond)
	g.answered(tightSlack)
	g.answered(tightSlack - 1)
	g.answered(-3 * time.Millisecond)
	require.EqualValues(t, 4, g.answers.Load())
	require.EqualValues(t, 2, g.tight.Load(), "under tightSlack to spare, late included")
}

func TestGovernorReadsSchedulerLatency(t *testing.T) {
	g := newGovernor()
	p90, _ := g.read()
	require.Zero(t, p90, "the first read is the baseline")
	// Many goroutines runnable at once on few Ps: the run queue is long.
	const spinners = 200
	done := make(chan struct{})
	var yields atomic.Int64
	for range spinners {
		go func() {
			for {
				select {
				case <-done:
					return
				default:
					for i := 0; i < 2e4; i++ {
						_ = i * i
					}
					runtime.Gosched()
					yields.Add(1)
				}
			}
		}()
	}
	// read needs schedMinSamples scheduling events, of which the runtime
	// samples about one in eight: wait for many times that many yields,
	// however little CPU a loaded machine gives the process (a fixed sleep
	// saw too few of them under load and read 0).
	require.Eventually(t, func() bool { return yields.Load() >= spinners*schedMinSamples }, 60*time.Second, time.Millisecond)
	p90, p99 := g.read()
	close(done)
	require.Greater(t, p90, 100*time.Microsecond, "200 spinning goroutines make goroutines wait for a core")
	require.GreaterOrEqual(t, p99, p90)
	g.tail.Store(int64(p99))
	require.Equal(t, min(2*p99, maxSchedReserve), g.schedReserve())
}

func TestQueueGate(t *testing.T) {
	var q queueGate
	t0 := time.Unix(1000, 0)
	const tmax = 200 * time.Millisecond
	// Short queues are always admitted, and reset the gate.
	require.True(t, q.admit(t0, 50*time.Millisecond, tmax), "a quarter of T is the target")
	// Over target: admitted for queueInterval, then shed while it stays over.
	require.True(t, q.admit(t0, 60*time.Millisecond, tmax))
	require.True(t, q.admit(t0.Add(queueInterval-time.Millisecond), 70*time.Millisecond, tmax))
	require.False(t, q.admit(t0.Add(queueInterval), 70*time.Millisecond, tmax))
	require.False(t, q.admit(t0.Add(time.Second), 51*time.Millisecond, tmax))
	// One request within target ends the shedding.
	require.True(t, q.admit(t0.Add(time.Second), 10*time.Millisecond, tmax))
	require.True(t, q.admit(t0.Add(time.Second), 80*time.Millisecond, tmax), "a new interval starts")
	// The target follows the request's T.
	require.True(t, q.admit(t0.Add(2*time.Second), 200*time.Millisecond, time.Second))
}

// TestGovernorWaitsForABusyCPU: while its CPUs have room, a queue over the
// target and tight answers are a burst or a slow bidder, not an overload:
// the limit stays lifted. Once the CPUs are busy it is cut, and from then on
// it follows the queue whatever the CPUs do (the sheds free them).
func TestGovernorWaitsForABusyCPU(t *testing.T) {
	g := newGovernor()
	g.busy = cpuBusy - 0.01
	for range 3 * queueWindow {
		g.adjust(1000, 0, 256, 2048, queueTarget*2)
		g.adjust(1000, 100, 256, 2048, queueTarget*2)
	}
	require.Equal(t, 2048, g.effective(2048), "room on the CPUs: no cut")
	g.busy = cpuBusy
	g.adjust(1000, 0, 256, 2048, queueTarget*2)
	require.Equal(t, 128, g.effective(2048), "busy CPUs: 256 scaled by 1/2")
	g.busy = 0.3
	g.adjust(1000, 0, 128, 2048, queueTarget*2)
	require.Equal(t, 64, g.effective(2048), "constrained: the queue alone")
	g.adjust(1000, 100, 64, 2048, queueTarget/4)
	require.Equal(t, 48, g.effective(2048), "constrained: tight answers alone")
	g.adjust(1000, 0, 48, 2048, queueTarget/4)
	require.Equal(t, 60, g.effective(2048), "calm: grows")
	// Lifted again (grown past the ceiling): the CPUs gate once more.
	g.limit.Store(0)
	g.adjust(1000, 100, 256, 2048, queueTarget*2)
	require.Equal(t, 2048, g.effective(2048))
}

// scriptedCPU is a cpuSource returning prepared samples (ok false: a failed
// reading).
type scriptedCPU struct {
	samples []cpuSample
	ok      []bool
}

func (s *scriptedCPU) read(c *cpuSample) bool {
	c.proc, c.busy, c.total = s.samples[0].proc, s.samples[0].busy, s.samples[0].total
	ok := s.ok[0]
	s.samples, s.ok = s.samples[1:], s.ok[1:]
	return ok
}

func TestCPUMeter(t *testing.T) {
	require.Equal(t, 3, cpuWindow, "the expected shares below are over three intervals")
	src := &scriptedCPU{}
	m := cpuMeter{src: src}
	procs := runtime.GOMAXPROCS(0)
	at := time.Unix(1000, 0)
	step := func(proc float64, busy, total uint64, ok bool) (float64, bool) {
		// proc: in intervals' worth of all of GOMAXPROCS
		src.samples = append(src.samples, cpuSample{proc: time.Duration(proc * float64(procs) * float64(100*time.Millisecond)), busy: busy, total: total})
		src.ok = append(src.ok, ok)
		at = at.Add(100 * time.Millisecond)
		m.sample(at)
		return m.share()
	}
	for _, p := range []float64{0, 0.5, 1} {
		_, known := step(p, 0, 0, true)
		require.False(t, known, "fewer than cpuWindow intervals")
	}
	share, known := step(1.5, 0, 0, true)
	require.True(t, known)
	require.InDelta(t, 0.5, share, 1e-9, "1.5 intervals of GOMAXPROCS over 3")
	// The machine's CPUs busier than the process: their share.
	share, _ = step(1.6, 90, 100, true)
	require.InDelta(t, 0.9, share, 1e-9)
	share, _ = step(1.7, 180, 200, true)
	require.InDelta(t, 0.9, share, 1e-9)
	// The process busier than its CPUs' counters say (a container at its
	// CPU limit on an idle node): its own share, at most 1.
	share, _ = step(3.2, 200, 400, true)
	require.InDelta(t, (3.2-1.5)/3, share, 1e-9, "against 200 of 400 ticks")
	share, _ = step(4.7, 210, 500, true)
	require.InDelta(t, 1, share, 1e-9)
	// A failed reading makes the share unknown until it leaves the window.
	_, known = step(0, 0, 0, false)
	require.False(t, known)
	for i, p := range []float64{5, 6, 7, 8} {
		share, known = step(p, 300+uint64(i)*100, 600+uint64(i)*100, true)
		require.Equal(t, i == cpuWindow, known, "sample %d after the failed one", i+1)
	}
	require.InDelta(t, 1, share, 1e-9)
}
