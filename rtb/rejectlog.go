package rtb

import (
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/VictoriaMetrics/metrics"

	"github.com/bidguard/bidguard/engine"
)

// rejectLog is the rate-limited log of rejections: one line per rejected
// bid ("bid rejected") and per warn-mode or shadow hit ("bid warned"), with
// upstream, request id, seat, bid id, impid, gate and reason; a
// response-level hit has empty seat, bid id and impid. At most
// log.rejectionsPerSecond lines are written per wall-clock second; the rest
// are counted (bidguard_rejection_log_suppressed_total) and the count is
// written with the next line as suppressed=N, or by flush. Nothing is
// formatted for a suppressed line, and nothing happens for a response
// without hits. Safe for concurrent use.
type rejectLog struct {
	log        *slog.Logger
	suppressed *metrics.Counter

	mu      sync.Mutex
	second  int64 // the Unix second lines are counted in
	lines   int   // lines written in it
	pending int   // lines suppressed since the last one written
}

// maxLogField bounds seat and bid id in a line: they are bidder text.
const maxLogField = 64

// record logs the hits of one judged response at rate lines a second (0:
// nothing is logged or counted).
func (r *rejectLog) record(rate int, up, reqID string, out *engine.Outcome) {
	hits := out.NumHits()
	if rate <= 0 || hits == 0 {
		return
	}
	now := time.Now().Unix()
	r.mu.Lock()
	if now != r.second {
		r.second, r.lines = now, 0
	}
	n := min(hits, rate-r.lines)
	if n < 0 {
		n = 0
	}
	r.lines += n
	carried := 0
	if n > 0 {
		carried, r.pending = r.pending, 0
	}
	r.pending += hits - n
	r.mu.Unlock()
	if hits > n {
		r.suppressed.Add(hits - n)
	}
	for i := range n {
		h, rejected := out.Hit(i)
		msg := "bid warned"
		if rejected {
			msg = "bid rejected"
		}
		args := []any{"upstream", up, "req_id", clip(reqID), "seat", clip(h.Seat), "bid_id", clip(h.BidID),
			"impid", clip(h.ImpID), "gate", h.Gate, "reason", h.Reason}
		if i == 0 && carried > 0 {
			args = append(args, "suppressed", carried)
		}
		r.log.Info(msg, args...)
	}
}

// flush writes the count of suppressed lines not yet reported (Shutdown).
func (r *rejectLog) flush() {
	r.mu.Lock()
	n := r.pending
	r.pending = 0
	r.mu.Unlock()
	if n > 0 {
		r.log.Info("rejection log lines suppressed", "suppressed", n)
	}
}

// clip cuts bidder text to maxLogField bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxLogField {
		return s
	}
	i := maxLogField
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
