package main

// The anomaly detector's wiring (docs/design.md "Anomaly detection
// and quarantine"): the quarantine block turned into detector settings at every
// load, the detector as every snapshot's seat states (the quarantine gate's
// view), judged bids fed to it from the bid path, its events audited and
// metered, and its admin endpoints behind admin.tokenFile.

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/bidguard/bidguard/audit"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/quarantine"
)

// maxTokenBytes bounds the admin token file.
const maxTokenBytes = 4096

// transitionTargets are the values of
// bidguard_quarantine_transitions_total{to}: refused counts the
// quarantines the safety valve held back.
var transitionTargets = []quarantine.EventKind{quarantine.Quarantined, quarantine.Released, quarantine.Refused}

// quarantineWiring is serve's detector and what connects it. Its fields are
// set before serving (audit once the log is open) and only read after.
type quarantineWiring struct {
	d       *quarantine.Detector
	cfgPath string
	holder  *engine.Holder
	audit   *audit.Log // nil when the audit log is off
	counts  map[[2]string]*metrics.Counter
}

// newQuarantineWiring makes the detector (off until update) on clock now.
func newQuarantineWiring(cfgPath string, holder *engine.Holder, log *slog.Logger, now func() time.Time) *quarantineWiring {
	q := &quarantineWiring{cfgPath: cfgPath, holder: holder, counts: map[[2]string]*metrics.Counter{}}
	q.d = quarantine.New(quarantine.Options{Now: now, Logger: log, OnEvent: q.event})
	return q
}

// register creates the quarantine series in set up front:
// bidguard_quarantined_seats and every bidguard_quarantine_transitions_total
// {signal, to} that can occur.
func (q *quarantineWiring) register(set *metrics.Set) {
	set.GetOrCreateGauge("bidguard_quarantined_seats", func() float64 { return float64(q.d.Count()) })
	for _, sig := range append(quarantine.Measured(), quarantine.Operator) {
		for _, to := range transitionTargets {
			if sig == quarantine.Operator && to == quarantine.Refused {
				continue // the valve holds back only the detector
			}
			q.counts[[2]string{sig.String(), to.String()}] = set.GetOrCreateCounter(
				`bidguard_quarantine_transitions_total{signal="` + sig.String() + `",to="` + to.String() + `"}`)
		}
	}
}

// attach makes the detector snap's seat states, before snap is shared.
func (q *quarantineWiring) attach(snap *engine.Snapshot) { snap.Quarantine = q.d }

// update applies snap's quarantine block (at startup and after each reload).
func (q *quarantineWiring) update(snap *engine.Snapshot) error {
	return q.d.Update(quarantineSettings(snap))
}

// quarantineSettings are the detector settings of a snapshot's config,
// stamped with its version.
func quarantineSettings(snap *engine.Snapshot) quarantine.Settings {
	s := snap.Config.QuarantineSettings()
	s.Version = snap.Version
	return s
}

// event meters a transition and audits quarantines and releases (control
// records: never dropped).
func (q *quarantineWiring) event(e quarantine.Event) {
	if c := q.counts[[2]string{e.Signal.String(), e.Kind.String()}]; c != nil {
		c.Inc()
	}
	if q.audit == nil || e.Kind == quarantine.Refused {
		return
	}
	kind := audit.KindQuarantine
	if e.Kind == quarantine.Released {
		kind = audit.KindRelease
	}
	_ = q.audit.Append(&audit.Record{Kind: kind, Seat: e.Seat, Gate: "rtb.quarantine",
		Reason: e.Signal.String() + ": " + e.Reason, Policy: e.Version}) // fails only once closed, after the detector stopped
}

// judged is rtb.Options.Judged: every bid of a judged response goes to its
// seat's tracker, marked rejected when its verdict holds a rejection (or a
// would-be one, under action: shadow) by a gate other than the one that
// enforces the quarantine (a quarantine would feed itself). Warn-mode hits
// and response-level rejections mark no bid. It allocates nothing for known
// seats.
func (q *quarantineWiring) judged(upstream string, _ *engine.Snapshot, ev *engine.Eval, out *engine.Outcome) {
	if !q.d.Enabled() {
		return
	}
	var seat *quarantine.Seat
	last, looked := "", false
	for i := range out.Bids {
		b := &ev.In.Bids[i]
		if !looked || b.Seat != last {
			seat, last, looked = q.d.Seat(upstream, b.Seat), b.Seat, true
		}
		if seat == nil {
			continue
		}
		seat.Observe(&quarantine.Bid{Price: b.Price, HasPrice: b.HasPrice, Rejected: countsAsRejection(&out.Bids[i]),
			CRID: b.CrID, ADomain: b.ADomain})
	}
}

// countsAsRejection reports whether a bid's verdict counts in its seat's
// rejection rate: a rejection or would-be rejection by a gate that does not
// enforce the quarantine.
func countsAsRejection(v *engine.BidVerdict) bool {
	g := v.Rejection.Gate
	return v.Failed() && (g == nil || !g.EnforcesQuarantine())
}

// handler is the admin endpoints' handler for rtb.Options.Quarantine.
func (q *quarantineWiring) handler() http.Handler { return q.d.Handler(q.token) }

// token reads admin.tokenFile of the current config on every request (a
// rotated token takes effect at once): its bytes without surrounding
// whitespace, at most maxTokenBytes. A relative path resolves against the
// config file's directory.
func (q *quarantineWiring) token() ([]byte, error) {
	snap := q.holder.Load()
	if snap == nil || snap.Config.Admin.TokenFile == "" {
		return nil, quarantine.ErrNoToken
	}
	path := snap.Config.Admin.TokenFile
	if !filepath.IsAbs(path) && q.cfgPath != "" {
		path = filepath.Join(filepath.Dir(q.cfgPath), path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admin.tokenFile: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return nil, fmt.Errorf("admin.tokenFile: %w", err)
	}
	if len(b) > maxTokenBytes {
		return nil, fmt.Errorf("admin.tokenFile: larger than %d bytes", maxTokenBytes)
	}
	return bytes.TrimSpace(b), nil
}
