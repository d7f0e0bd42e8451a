package main

// The audit log's wiring (docs/design.md "Audit log"): opening it from the
// config, turning the engine's hits into records for serve's bid path and
// for check --audit, and `bidguard audit verify`.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/bidguard/bidguard/audit"
	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
)

// auditHeadEvery is how often serve logs the chain head (seq, mac), for a
// log system to keep outside the host.
const auditHeadEvery = time.Minute

// auditMeters registers bidguard_audit_records_total{state} in set, whether
// the log is on or not, and takes the bid path's
// bidguard_panics_total{where="audit"} for panics in the writer.
func auditMeters(set *metrics.Set) audit.Meters {
	c := func(state string) *metrics.Counter {
		return set.GetOrCreateCounter(`bidguard_audit_records_total{state="` + state + `"}`)
	}
	return audit.Meters{Written: c("written"), Dropped: c("dropped"), Gap: c("gap"), Recovered: c("recovered"),
		Panics: set.GetOrCreateCounter(`bidguard_panics_total{where="audit"}`)}
}

// openAudit opens the audit log cfg names (relative paths resolve against
// cfgPath's directory, as every path a config names does), or returns nil
// when audit.path is "".
func openAudit(cfgPath string, cfg *config.Config, m audit.Meters, log *slog.Logger, wait bool, headEvery time.Duration) (*audit.Log, error) {
	opt, err := cfg.AuditOptions(cfgPath)
	if err != nil || opt.Path == "" {
		return nil, err
	}
	opt.Wait, opt.HeadEvery, opt.Meters, opt.Logger = wait, headEvery, m, log
	return audit.Open(opt)
}

// auditor is serve's rtb.Options.Audit: it hands the hits of a judged
// response to the log without blocking. Its log is set before serving.
type auditor struct{ log *audit.Log }

func (a *auditor) judged(snap *engine.Snapshot, ev *engine.Eval, out *engine.Outcome) {
	_ = auditHits(a.log, false, snap.Version, ev, out) // Enqueue: drops are counted, never an error
}

// auditHits turns the listed hits of one evaluation (Outcome.Hit) into
// records: rejections as reject records, warned hits (action: shadow and
// gates in mode: warn) as shadow records. policy is the config version.
// With wait (check) they are control records, never dropped; otherwise
// (serve) they are enqueued without blocking, and nothing is allocated.
func auditHits(l *audit.Log, wait bool, policy string, ev *engine.Eval, out *engine.Outcome) error {
	reqID := ""
	if ev.In.Request != nil {
		reqID = ev.In.Request.ID
	}
	for i := range out.NumHits() {
		h, rejected := out.Hit(i)
		kind := audit.KindShadow
		if rejected {
			kind = audit.KindReject
		}
		r := audit.Record{Kind: kind, ReqID: reqID, Seat: h.Seat, BidID: h.BidID, Gate: h.Gate, Reason: h.Reason,
			NBR: h.NBR, Loss: h.Loss, Policy: policy}
		if h.Bid >= 0 && h.Bid < len(ev.In.Bids) {
			b := &ev.In.Bids[h.Bid]
			r.CRID, r.ADomain = b.CrID, b.ADomain
			if b.HasPrice {
				r.PriceMicros = priceMicros(b.Price)
			}
		}
		if !wait {
			l.Enqueue(&r)
		} else if err := l.Append(&r); err != nil {
			return err
		}
	}
	return nil
}

// priceMicros converts a price to millionths, saturating.
func priceMicros(p float64) int64 {
	m := math.Round(p * 1e6)
	switch {
	case math.IsNaN(m):
		return 0
	case m >= math.MaxInt64:
		return math.MaxInt64
	case m <= math.MinInt64:
		return math.MinInt64
	}
	return int64(m)
}

// configRecord is the record of a config load: policy is the config
// version, reason says what loaded it ("startup: <file>", "reload (poll):
// <file>", "reload (SIGHUP): <file>").
func configRecord(snap *engine.Snapshot, reason, cfgPath string) *audit.Record {
	return &audit.Record{Kind: audit.KindConfig, Policy: snap.Version, Reason: reason + ": " + displayName(cfgPath)}
}

// runAudit is `bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE...`
// (args after verify): 0 intact,
// 1 a break (the first printed as <file>:<line>: <what>), 2 unreadable or
// bad flags. A summary of what was verified goes to stdout.
func runAudit(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("audit verify")
	keyFile := fs.String("key-file", "", "the HMAC key file of the log (audit.keyFile); without it, plain SHA-256")
	anchors := map[uint64][32]byte{}
	fs.Func("anchor", "SEQ:MAC, a head kept outside the host: record SEQ must be in the chain with that mac (repeatable)", func(v string) error {
		seq, mac, err := parseAnchor(v)
		anchors[seq] = mac
		return err
	})
	if code, ok := parseFlags(fs, args, true, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, "audit verify: no file given\n")
		return 2
	}
	var key []byte
	if *keyFile != "" {
		var err error
		if key, err = audit.ReadKeyFile(*keyFile); err != nil {
			fmt.Fprintf(stderr, "audit verify: --key-file: %v\n", err)
			return 2
		}
	}
	sum, err := audit.VerifyFiles(fs.Args(), key, anchors)
	var be *audit.BreakError
	switch {
	case errors.As(err, &be):
		fmt.Fprintln(stderr, be.Error())
		if be.Segment > 0 {
			fmt.Fprintf(stdout, "broken in segment %d (%s line %d); verified before the break: ", be.Segment, be.File, be.Line)
		} else {
			fmt.Fprintf(stdout, "broken (%s line %d); verified before the break: ", be.File, be.Line)
		}
		printSummary(stdout, sum)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "audit verify: %v\n", err)
		return 2
	}
	fmt.Fprint(stdout, "intact: ")
	printSummary(stdout, sum)
	return 0
}

// parseAnchor reads SEQ:MAC as the head lines print them.
func parseAnchor(v string) (uint64, [32]byte, error) {
	var mac [32]byte
	s, m, ok := strings.Cut(v, ":")
	seq, err := strconv.ParseUint(s, 10, 64)
	if !ok || err != nil || seq == 0 {
		return 0, mac, fmt.Errorf("want SEQ:MAC, have %q", v)
	}
	b, err := hex.DecodeString(m)
	if err != nil || len(b) != len(mac) {
		return 0, mac, fmt.Errorf("want a mac of 64 hex digits, have %q", m)
	}
	copy(mac[:], b)
	return seq, mac, nil
}

// printSummary prints what a verification saw; the segments are those
// verified whole.
func printSummary(w io.Writer, s audit.Summary) {
	fmt.Fprintf(w, "%d records in %d complete segments", s.Records, s.Segments)
	if s.Records == 0 {
		fmt.Fprintln(w)
		return
	}
	start := "from the first record"
	if !s.Genesis {
		start = "earlier segments not given"
	}
	fmt.Fprintf(w, ", seq %d to %d (%s), %s to %s\n", s.FirstSeq, s.LastSeq, start,
		s.First.Format(time.RFC3339Nano), s.Last.Format(time.RFC3339Nano))
	fmt.Fprintf(w, "gaps: %d (%d records dropped); recoveries: %d (%d bytes truncated)\n", s.Gaps, s.Dropped, s.Recoveries, s.Truncated)
	fmt.Fprint(w, "kinds:")
	for _, k := range []audit.Kind{audit.KindReject, audit.KindShadow, audit.KindConfig, audit.KindQuarantine, audit.KindRelease,
		audit.KindGap, audit.KindRecovered, audit.KindSegment} {
		if n := s.Kinds[k]; n > 0 {
			fmt.Fprintf(w, " %s %d", k, n)
		}
	}
	fmt.Fprintf(w, "\nhead: seq %d mac %x\n", s.LastSeq, s.Head)
}

// checkAudit appends the records of one check evaluation to the log at
// path, continuing its chain; the config's audit block gives the key, the
// fsync and segment settings. It waits for another process holding the
// log.
func checkAudit(path, cfgPath string, snap *engine.Snapshot, ev *engine.Eval) error {
	cfg := *snap.Config
	var err error
	if cfg.Audit.Path, err = filepath.Abs(path); err != nil { // --audit is relative to the working directory
		return err
	}
	l, err := openAudit(cfgPath, &cfg, audit.Meters{}, slog.New(slog.DiscardHandler), true, 0)
	if err != nil {
		return err
	}
	err = auditHits(l, true, snap.Version, ev, &ev.Out)
	return errors.Join(err, l.Close())
}
