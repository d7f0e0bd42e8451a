package main

import "github.com/bidguard/bidguard/rtb"

// serveMetricHelp is the # HELP text of the families serve registers in
// the bid path's set (rtb describes its own).
var serveMetricHelp = map[string]string{
	"bidguard_config_reloads_total":          "Config reloads, by result (success, error, restart_required).",
	"bidguard_config_last_reload_successful": "1 when the last config reload applied, else 0.",
	"bidguard_audit_records_total":           "Audit records, by state (written, dropped, gap, recovered).",
	"bidguard_quarantined_seats":             "Seats quarantined now, quarantine.seats included.",
	"bidguard_quarantine_transitions_total":  "Seat quarantine transitions, by signal and the state entered (quarantined, released, refused by the safety valve).",
}

// describeServeMetrics gives serve's families their # HELP text.
func describeServeMetrics(srv *rtb.Server) {
	for family, help := range serveMetricHelp {
		srv.Describe(family, help)
	}
}
