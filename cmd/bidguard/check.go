package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/bidguard/bidguard/engine"
)

// runCheck is `bidguard check`: exit 0 when passed, 1 when not, 2 when the
// input cannot be evaluated (stdout empty, one line `<file>: <problem>` on
// stderr).
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check")
	reqPath := fs.String("request", "", "bid request JSON file")
	respPath := fs.String("response", "", "bid response JSON file")
	cfgPath := fs.String("config", "", "config file (default: the embedded config)")
	elapsed := fs.Int64("elapsed-ms", 0, "freeze the clock at arrival + N ms")
	latency := fs.Int64("latency-ms", -1, "the bidder's response time seen by the latency gate")
	all := fs.Bool("all", false, "run as if failFast were false and list every hit")
	auditPath := fs.String("audit", "", "append this evaluation's audit records to the log FILE, continuing its chain")
	fail := func(where string, err error) int {
		fmt.Fprintf(stderr, "%s: %s\n", where, oneLine(err))
		return 2
	}
	if code, ok := parseFlags(fs, args, false, stdout, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *reqPath == "":
		return fail("check", errors.New("--request is required"))
	case *respPath == "":
		return fail("check", errors.New("--response is required"))
	case *elapsed < 0:
		return fail("check", errors.New("--elapsed-ms must be an integer >= 0"))
	case set["latency-ms"] && *latency < 0:
		return fail("check", errors.New("--latency-ms must be an integer >= 0"))
	}
	snap, err := loadSnapshot(*cfgPath)
	if err != nil {
		return fail(displayName(*cfgPath), err)
	}
	lim := snap.Config.Limits
	req, err := readLimited(*reqPath, lim.MaxRequestBytes, "limits.maxRequestBytes")
	if err != nil {
		return fail(*reqPath, err)
	}
	resp, err := readLimited(*respPath, lim.MaxResponseBytes, "limits.maxResponseBytes")
	if err != nil {
		return fail(*respPath, err)
	}
	rep, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{ElapsedMs: *elapsed, LatencyMs: *latency, All: *all})
	if err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) && ie.Which == "response" {
			return fail(*respPath, ie.Err)
		}
		if errors.As(err, &ie) {
			return fail(*reqPath, ie.Err)
		}
		return fail("check", err)
	}
	defer engine.ReleaseEval(ev)
	if *auditPath != "" {
		// Before anything is printed: exit 2 leaves stdout empty.
		if err := checkAudit(*auditPath, *cfgPath, snap, ev); err != nil {
			return fail(*auditPath, err)
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fail("check", err)
	}
	if rep.Passed {
		return 0
	}
	return 1
}

// readLimited reads a file that may hold at most limit bytes.
func readLimited(path string, limit int, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("larger than %s (%d bytes)", what, limit)
	}
	return data, nil
}
