package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ctvConfig writes a config running the embedded default policy followed
// by videoCompliance and podCompliance with podOptions (YAML flow mapping
// content, "" for the defaults), and returns its path.
func ctvConfig(t *testing.T, dir, name, podOptions string) string {
	t.Helper()
	def, err := os.ReadFile(filepath.Join("..", "configs", "bidguard.yaml"))
	require.NoError(t, err)
	text := string(def)
	require.True(t, strings.HasSuffix(strings.TrimSpace(text), "- gate: quarantine"), "policy.gates ends the embedded config")
	text = strings.TrimRight(text, "\n") + "\n    - gate: videoCompliance\n    - gate: podCompliance\n      options: {" + podOptions + "}\n"
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

type ctvCheckReport struct {
	Passed   bool
	Rejected []struct {
		Gate   string
		BidID  string `json:"bid_id"`
		Reason string
	}
}

// checkWith runs `bidguard check` on the pair under config cfg.
func checkWith(t *testing.T, bin, dir, cfg, name string, req, resp []byte) ctvCheckReport {
	t.Helper()
	rq, rs := filepath.Join(dir, name+".request.json"), filepath.Join(dir, name+".response.json")
	require.NoError(t, os.WriteFile(rq, req, 0o644))
	require.NoError(t, os.WriteFile(rs, resp, 0o644))
	out, err := exec.Command(bin, "check", "--config", cfg, "--request", rq, "--response", rs).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("check %s: %v", name, err)
	}
	var rep ctvCheckReport
	require.NoError(t, json.Unmarshal(out, &rep), string(out))
	return rep
}

// TestVideoKindsAgainstCheck: with videoCompliance and podCompliance
// after the default policy, valid answers to the CTV and display sample
// requests pass, and each video and pod kind, on every imp it applies
// to, is the one bid rejected, by its kind's gate, under the options it
// needs and under the strictest ones; a kind that needs an option passes
// the gates' defaults. The kinds stay pending (out of -kinds default):
// the embedded default policy does not run these gates.
func TestVideoKindsAgainstCheck(t *testing.T) {
	bin := buildBidguard(t)
	dir := t.TempDir()
	configs := map[string]string{
		"":                     ctvConfig(t, dir, "defaults", ""),
		"podFit: all":          ctvConfig(t, dir, "fit-all", "podFit: all"),
		"exclusive: [adomain]": ctvConfig(t, dir, "adomain", "exclusive: [adomain]"),
		"exclusive: [cat]":     ctvConfig(t, dir, "cat", "exclusive: [cat]"),
		"strictest":            ctvConfig(t, dir, "strictest", "podFit: all, exclusive: [adomain, cat]"),
	}
	ctv, err := sampleCTVRequest()
	require.NoError(t, err)
	display, err := sampleRequest()
	require.NoError(t, err)
	for i, req := range [][]byte{ctv, display} {
		resp, err := samplePair(req, nil)
		require.NoError(t, err)
		rep := checkWith(t, bin, dir, configs["strictest"], "ok", req, resp)
		require.True(t, rep.Passed, "request %d: valid bids pass both gates: %+v", i, rep.Rejected)
	}
	for _, k := range videoKinds {
		_, known := configs[k.needs]
		require.True(t, known, "kind %s needs %q: add a config", k.name, k.needs)
		tried := 0
		for _, req := range [][]byte{ctv, display} {
			var rq struct{ Imp []json.RawMessage }
			require.NoError(t, json.Unmarshal(req, &rq))
			for imp := range rq.Imp {
				resp, err := samplePairOn(req, k, imp)
				if err != nil {
					continue
				}
				tried++
				for _, cfg := range []string{k.needs, "strictest"} {
					rep := checkWith(t, bin, dir, configs[cfg], k.name, req, resp)
					require.Len(t, rep.Rejected, 1, "kind %s on imp %d (%s): %+v", k.name, imp, cfg, rep.Rejected)
					r := rep.Rejected[0]
					require.Equal(t, k.gate, r.Gate, "kind %s on imp %d: %s", k.name, imp, r.Reason)
					require.True(t, strings.HasPrefix(r.BidID, k.tag+"-"), "kind %s: the tagged bid is the one rejected", k.name)
					require.Contains(t, r.Reason, videoKindReasons[k.name], "kind %s on imp %d", k.name, imp)
				}
				if k.needs != "" {
					rep := checkWith(t, bin, dir, configs[""], k.name, req, resp)
					require.True(t, rep.Passed, "kind %s passes without %s: %+v", k.name, k.needs, rep.Rejected)
				}
			}
		}
		require.NotZero(t, tried, "kind %s applies to no imp of the sample requests", k.name)
	}
}
