package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/internal/testserve"
)

// Settings of the kill -9 test: a small queue and many rejected bids per
// response make drops certain.
const (
	killQueue     = 32
	killBids      = 20 // bids per response, all rejected
	killClients   = 8
	killRuns      = 4 // the last one shuts down gracefully
	killLoadFor   = 300 * time.Millisecond
	killScrapes   = 5 // successful scrapes before the kill, at least
	killScrapeGap = 15 * time.Millisecond
)

// killRun is what the test saw of one serve process.
type killRun struct {
	start    time.Time
	seen     atomic.Int64 // rejections in answers received (X-Bidguard-Rejected)
	written  float64      // bidguard_audit_records_total{state="written"} at the last scrape
	scrapes  int
	breaches []string // scrapes where accepted-and-unwritten exceeded the queue
}

// TestServeAuditKill9 builds the binary, runs serve with the audit log on
// against a fake bidder whose bids are all rejected, under drop-heavy load,
// kills it with SIGKILL, restarts it, three times, then stops it
// gracefully. The chain verifies; every record a process reported written
// is in the file; at every scrape the rejections answered were at most the
// records written, dropped and queued (so at most the queue length was
// accepted and unwritten).
func TestServeAuditKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it: not under -short")
	}
	dir := t.TempDir()
	bin := testserve.Build(t)
	bidder := allRejectedBidder(t)
	require.NoError(t, writeFile(filepath.Join(dir, "audit.key"), auditKey))
	cfg := filepath.Join(dir, "bidguard.yaml")
	require.NoError(t, writeFile(cfg, fmt.Sprintf("listen: 127.0.0.1:0\nadminListen: 127.0.0.1:0\nshutdown: {drainMs: 0}\n"+
		"audit: {path: audit.log, keyFile: audit.key, queue: %d, fsyncEvery: 4, segmentBytes: 262144}\n"+
		"policy:\n  gates: [{gate: impidMatch}]\n", killQueue)))

	runs := make([]*killRun, killRuns)
	for i := range runs {
		runs[i] = runServeUnderLoad(t, bin, cfg, bidder, i == killRuns-1)
	}

	log := filepath.Join(dir, "audit.log")
	code, out, errOut := runCmd("audit", "verify", "--key-file", filepath.Join(dir, "audit.key"), log)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	t.Logf("audit verify: %s", out)

	recs := auditLines(t, log)
	var totalDropped float64
	for i, run := range runs {
		end := time.Now().Add(time.Hour)
		if i+1 < len(runs) {
			end = runs[i+1].start
		}
		var records, rejects int
		var dropped float64
		for _, r := range recs {
			ts, err := time.Parse(time.RFC3339Nano, r["ts"].(string))
			require.NoError(t, err)
			if ts.Before(run.start) || !ts.Before(end) {
				continue
			}
			records++
			switch r["kind"] {
			case "reject":
				rejects++
			case "gap":
				n, err := strconv.Atoi(strings.TrimSuffix(r["reason"].(string), " records dropped"))
				require.NoError(t, err)
				dropped += float64(n)
			}
		}
		totalDropped += dropped
		t.Logf("run %d: %d rejections answered, %d records in the file (%d rejects, %.0f dropped in gaps), %.0f reported written at the last of %d scrapes",
			i+1, run.seen.Load(), records, rejects, dropped, run.written, run.scrapes)
		require.Empty(t, run.breaches, "run %d", i+1)
		require.Positive(t, run.scrapes, "run %d", i+1)
		require.GreaterOrEqual(t, float64(records), run.written, "run %d: every record reported written is in the file", i+1)
		require.LessOrEqual(t, int64(rejects)+int64(dropped), run.seen.Load()+killClients*killBids,
			"run %d: no record without a rejection (at most the answers in flight at the kill)", i+1)
	}
	require.Positive(t, totalDropped, "the load was drop-heavy")
}

// allRejectedBidder answers every request with killBids bids for an imp the
// request does not have.
func allRejectedBidder(t *testing.T) string {
	var bids []string
	for i := range killBids {
		bids = append(bids, fmt.Sprintf(`{"id":"b%d","impid":"nope","price":1,"crid":"c%d","adomain":["brand.com"]}`, i, i))
	}
	body := `{"id":"r1","seatbid":[{"seat":"s1","bid":[` + strings.Join(bids, ",") + `]}]}`
	return testbidder.HTTP(t, testbidder.Answer(200, []byte(body))).URL + "/bid"
}

// runServeUnderLoad starts serve, loads it for killLoadFor while scraping
// its metrics, then kills it with SIGKILL, or with graceful SIGTERM.
func runServeUnderLoad(t *testing.T, bin, cfg, bidder string, graceful bool) *killRun {
	t.Helper()
	run := &killRun{start: time.Now()}
	p := testserve.Start(t, testserve.Options{Bin: bin, Args: []string{"--config", cfg, "--upstream", bidder}})
	addr, admin := p.Addr, p.Admin

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: killClients}}
	defer client.CloseIdleConnections()
	stopLoad := make(chan struct{})
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopLoad) }) }
	defer stop() // also when the test fails early
	var wg sync.WaitGroup
	for range killClients {
		wg.Go(func() {
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				resp, err := client.Post("http://"+addr+"/", "application/json", strings.NewReader(reloadReq))
				if err != nil {
					continue // the process is gone
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n, _ := strconv.Atoi(resp.Header.Get("X-Bidguard-Rejected"))
				run.seen.Add(int64(n))
			}
		})
	}
	scraped := make(chan struct{})
	enough := make(chan struct{}) // closed after killScrapes scrapes
	go func() {
		defer close(scraped)
		for {
			select {
			case <-stopLoad:
				return
			case <-time.After(killScrapeGap):
			}
			seen := run.seen.Load() // answered before the scrape begins
			w, d, ok := auditCounters(client, admin)
			if !ok {
				continue
			}
			run.written, run.scrapes = w, run.scrapes+1
			if run.scrapes == killScrapes {
				close(enough)
			}
			if float64(seen) > w+d+killQueue {
				run.breaches = append(run.breaches, fmt.Sprintf("%d rejections answered > %.0f written + %.0f dropped + %d queued", seen, w, d, killQueue))
			}
		}
	}()
	time.Sleep(killLoadFor)
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
		t.Fatalf("fewer than %d scrapes of /metrics in 20 s; stderr: %s", killScrapes, p.Log)
	}
	if graceful {
		stop()
		wg.Wait()
		<-scraped
		p.Stop() // exit 0 after SIGTERM
		return run
	}
	p.Signal(syscall.SIGKILL)
	<-p.Done()
	stop()
	wg.Wait()
	<-scraped
	return run
}

// auditCounters scrapes written and dropped from the admin /metrics.
func auditCounters(client *http.Client, admin string) (written, dropped float64, ok bool) {
	resp, err := client.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	found := 0
	for sc.Scan() {
		name, val, _ := strings.Cut(sc.Text(), " ")
		v, err := strconv.ParseFloat(val, 64)
		switch {
		case err != nil:
		case name == `bidguard_audit_records_total{state="written"}`:
			written, found = v, found+1
		case name == `bidguard_audit_records_total{state="dropped"}`:
			dropped, found = v, found+1
		}
	}
	return written, dropped, found == 2 && sc.Err() == nil
}
