package main

import (
	"io"

	"github.com/VictoriaMetrics/metrics"
	"github.com/bidguard/bidguard/gates"
	"github.com/bidguard/bidguard/rtb"
)

// serveMetricHelp is the # HELP text of the families serve registers in
// the bid path's set (rtb describes its own).
var serveMetricHelp = map[string]string{
	"bidguard_config_reloads_total":          "Config reloads, by result (success, error, restart_required).",
	"bidguard_config_last_reload_successful": "1 when the files on disk are what is loaded or loadable, else 0.",
	"bidguard_config_restart_required":       "1 when the files change a key that takes effect only at the next start (listen, adminListen, audit, log.format), else 0.",
	"bidguard_audit_records_total":           "Audit records, by state (written, dropped, gap, recovered).",
	"bidguard_quarantined_seats":             "Seats quarantined now, quarantine.seats included.",
	"bidguard_quarantine_transitions_total":  "Seat quarantine transitions, by signal and the state entered (quarantined, released, refused by the safety valve).",
	"bidguard_capture_records_total":         "Captured auctions, by state (written, dropped: queue full or shutting down, failed: the file could not be written).",
	"bidguard_capture_bytes_total":           "Bytes written to capture files.",
	"bidguard_capture_rotations_total":       "Capture files rotated (the oldest beyond capture.maxFiles deleted).",
	"bidguard_markup_cache_hits_total":       "Creatives the markup gates found in their verdict cache (read before).",
	"bidguard_markup_cache_misses_total":     "Creatives the markup gates read because their verdict cache did not hold them.",
	"bidguard_markup_cache_evictions_total":  "Verdicts the markup gates' cache dropped to make room.",
	"bidguard_markup_cache_entries":          "Verdicts the markup gates' cache holds.",
	"bidguard_markup_cache_on":               "1 while every markup reading goes through the verdict cache; 0 while its valve keeps it off but for a sample (the cache does not pay: creatives are new at every bid).",
	"bidguard_markup_cache_bypassed_total":   "Markup readings that skipped the verdict cache (its valve off, the creative not in its sample).",
}

// registerMarkupCache exposes the markup gates' verdict cache counters
// (hit rate: hits / (hits + misses)), read when scraped.
func registerMarkupCache(set *metrics.Set) {
	set.RegisterMetricsWriter(func(w io.Writer) {
		st := gates.MarkupCacheStats()
		metrics.WriteCounterUint64(w, "bidguard_markup_cache_hits_total", st.Hits)
		metrics.WriteCounterUint64(w, "bidguard_markup_cache_misses_total", st.Misses)
		metrics.WriteCounterUint64(w, "bidguard_markup_cache_evictions_total", st.Evictions)
		metrics.WriteGaugeUint64(w, "bidguard_markup_cache_entries", uint64(st.Entries))
		on, bypassed := gates.MarkupCacheValve()
		metrics.WriteGaugeUint64(w, "bidguard_markup_cache_on", b2u(on))
		metrics.WriteCounterUint64(w, "bidguard_markup_cache_bypassed_total", bypassed)
	})
}

// describeServeMetrics gives serve's families their # HELP text.
func describeServeMetrics(srv *rtb.Server) {
	for family, help := range serveMetricHelp {
		srv.Describe(family, help)
	}
}

// b2u is a boolean gauge's value.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
