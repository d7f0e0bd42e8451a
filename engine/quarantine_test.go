package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// quarantine.seats without a detector (check): a bare entry quarantines the
// seat on every upstream and without one; "<upstream>/<seat>" only that
// upstream's seat, so it never applies in check.
func TestOperatorSeatStates(t *testing.T) {
	snap := snapshot(t, "upstreams: [{name: dsp-a, url: 'http://127.0.0.1:1/'}]\nquarantine: {seats: [s1, dsp-a/s2]}\n")
	q := snap.Quarantine
	require.NotNil(t, q)
	require.True(t, q.Any())
	f := func(upstream, seat, want string) {
		t.Helper()
		require.Equal(t, want, q.Quarantined(upstream, seat), "%s/%s", upstream, seat)
	}
	f("", "s1", "operator")
	f("dsp-a", "s1", "operator")
	f("dsp-b", "s1", "operator")
	f("", "s2", "")
	f("dsp-a", "s2", "operator")
	f("dsp-b", "s2", "")
	f("dsp-a", "s3", "")

	require.Nil(t, snapshot(t, "{}").Quarantine, "no quarantine.seats: nothing to report")
}

func TestQuarantineSeatsNameAnUpstream(t *testing.T) {
	msg := compileErr(t, "quarantine: {seats: [dsp-x/s1, '']}\n")
	require.Contains(t, msg, `quarantine.seats: "dsp-x/s1": no upstream named "dsp-x"`)
	require.Contains(t, msg, "quarantine.seats: a seat may not be empty")
}
