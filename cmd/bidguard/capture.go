package main

import (
	"log/slog"

	"github.com/VictoriaMetrics/metrics"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
)

// captureMeters registers bidguard_capture_records_total{state} (written,
// dropped: the queue was full, failed: the file could not be opened or
// written), bidguard_capture_bytes_total and
// bidguard_capture_rotations_total in set, whether capture is on or not.
func captureMeters(set *metrics.Set) capture.Meters {
	c := func(state string) *metrics.Counter {
		return set.GetOrCreateCounter(`bidguard_capture_records_total{state="` + state + `"}`)
	}
	return capture.Meters{Written: c("written"), Dropped: c("dropped"), Failed: c("failed"),
		Bytes: set.GetOrCreateCounter("bidguard_capture_bytes_total"), Rotated: set.GetOrCreateCounter("bidguard_capture_rotations_total")}
}

// capturer is serve's rtb.Options.Capture: it hands the sampled auctions to
// the capture writer without blocking. Its writer is set before serving;
// nil when capture.path is "".
type capturer struct{ w *capture.Writer }

// open starts the writer cfg's capture block names (its path resolved
// against cfgPath's directory). A file that cannot be written is not an
// error: the writer logs and counts it.
func (c *capturer) open(cfgPath string, cfg *config.Config, m capture.Meters, log *slog.Logger) {
	opt := cfg.CaptureOptions(cfgPath)
	if opt.Path == "" {
		return
	}
	opt.Meters, opt.Logger = m, log
	c.w = capture.New(opt)
	log.Info("capturing auctions", "path", opt.Path, "sample", cfg.Capture.Sample, "onlyRejected", cfg.Capture.OnlyRejected)
}

// close writes what is queued and stops the writer.
func (c *capturer) close(log *slog.Logger) {
	if c.w == nil {
		return
	}
	if err := c.w.Close(); err != nil {
		log.Error("capture file", "error", err)
	}
}

// judged captures the auction when the snapshot's capture.sample picks its
// request id (and, with onlyRejected, when something failed). An auction
// not picked costs a hash of its id and allocates nothing; a picked one is
// copied into a pooled entry.
func (c *capturer) judged(upstream string, snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome) {
	cp := &snap.Config.Capture
	if c.w == nil || ev.In.Request == nil || !capture.Sampled(ev.In.Request.ID, cp.Sample) {
		return
	}
	if cp.OnlyRejected && !anyFailed(out) {
		return
	}
	e := c.w.Acquire()
	if e == nil {
		return // the queue is full: counted as dropped
	}
	e.Arrival, e.Upstream, e.LatencyMs = ev.In.Arrival, upstream, ev.In.LatencyMs
	e.Request = append(e.Request[:0], ev.In.RawRequest...)
	e.Response = append(e.Response[:0], ev.In.RawResponse...)
	e.SetOutcome(snap.Version, out.Action.String(), out.Kept, summarize(&out.Response, "", ""))
	for i := range out.Bids {
		b := &ev.In.Bids[i]
		e.AddBid(summarize(&out.Bids[i].Judgement, b.ID, b.Seat))
	}
	c.w.Submit(e)
}

// anyFailed reports whether a gate rejected the response or a bid, or would
// have (action: shadow).
func anyFailed(out *engine.Outcome) bool {
	if out.Response.Failed() {
		return true
	}
	for i := range out.Bids {
		if out.Bids[i].Failed() {
			return true
		}
	}
	return false
}

// summarize is a judgement as a capture summary holds it.
func summarize(j *engine.Judgement, id, seat string) capture.Judged {
	return capture.Judged{ID: id, Seat: seat, Status: j.Status().String(), Gate: j.Rejection.Name, Reason: j.Rejection.Reason}
}
