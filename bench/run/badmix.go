package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runBadmix is `make loadtest`: the fake bidder sends a share of bad bids of
// every kind of the default policy (and some answers past tmax) through
// bidguard with the embedded default policy; the report compares what the
// bidder sent, what bidguard rejected per gate and what reached the client,
// and fails when a bad or late bid got through.
func runBadmix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("badmix", stderr)
	bin := fs.String("bin", "bin", "directory holding bidguard and loadtest (make build)")
	out := fs.String("out", "bench/out", "directory for the results and the plots")
	rate := fs.Int("rate", 1000, "requests/s")
	duration := fs.Duration("duration", 10*time.Second, "attack length")
	bad := fs.Float64("bad", 0.3, "share of bad bids")
	late := fs.Float64("late", 0.01, "share of answers sent past tmax")
	kinds := fs.String("kinds", "default", "bad-bid kinds (loadtest bidder -list-kinds)")
	latency := fs.String("bidder-latency", "lognormal:2ms,0.5", "the fake bidder's -latency")
	bidderArgs := fs.String("bidder-args", "", `more flags for the fake bidder, e.g. "-bids 1000 -seats 10000" (loadtest bidder -h)`)
	attackArgs := fs.String("attack-args", "", `more flags for the attack, e.g. "-gen-ctv 0.5 -connections 16" (loadtest attack -h)`)
	seatsDir := fs.String("seats-dir", "", "bidguard's seatsDir: seat policies, e.g. from `bin/loadtest seats -n 10000 -out DIR`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	e, err := newEnv(*bin, *out, "")
	if err != nil {
		fmt.Fprintf(stderr, "badmix: %v\n", err)
		return 1
	}
	defer e.procs.stopAll()
	if *seatsDir != "" {
		if e.seatsDir, err = filepath.Abs(*seatsDir); err != nil {
			fmt.Fprintf(stderr, "badmix: %v\n", err)
			return 1
		}
	}
	bidder, _, err := e.startBidder(ctx, append([]string{"-bad", fmt.Sprint(*bad), "-late", fmt.Sprint(*late), "-nobid", "0.02",
		"-kinds", *kinds, "-latency", *latency}, strings.Fields(*bidderArgs)...)...)
	if err != nil {
		fmt.Fprintf(stderr, "badmix: %v\n", err)
		return 1
	}
	bg, metrics, err := e.startBidguard(ctx, tBidguard, filepath.Join(e.bin, "bidguard"), plainUpstream(bidder))
	if err != nil {
		fmt.Fprintf(stderr, "badmix: %v\n", err)
		return 1
	}
	results := filepath.Join(e.procs.dir, "badmix.jsonl")
	// Generated requests: every child-directed or DSA-requiring one lets
	// the kinds that need it be drawn.
	// Later flags win: -attack-args may override these.
	attack := exec.CommandContext(ctx, filepath.Join(*bin, "loadtest"), append([]string{"attack", "-target", bg.url, "-rate", strconv.Itoa(*rate),
		"-duration", duration.String(), "-gen-coppa", "0.3", "-gen-dsa", "0.3", "-gen-imps", "1-4",
		"-metrics", metrics, "-bidder", "http://" + bidder, "-out", results, "-label", "badmix"}, strings.Fields(*attackArgs)...)...)
	attack.Stderr = stderr
	if err := attack.Run(); err != nil {
		fmt.Fprintf(stderr, "badmix: attack: %v\n", err)
		return 1
	}
	page := filepath.Join(*out, "badmix.html")
	report := exec.CommandContext(ctx, filepath.Join(*bin, "loadtest"), "report", "-html", page, results)
	report.Stdout, report.Stderr = stdout, stderr
	err = report.Run()
	fmt.Fprintf(stderr, "benchrun: plots in %s, raw results in %s\n", page, results)
	if err != nil {
		fmt.Fprintf(stderr, "badmix: %v\n", err)
		return 1
	}
	return 0
}
