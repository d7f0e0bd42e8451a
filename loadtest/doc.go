// Command loadtest is bidguard's load-test harness: a constant-rate load
// generator, a fake bidder and a report. It talks HTTP only and imports no
// bidguard package, so it measures bidguard, nginx or any other proxy the
// same way.
//
//	loadtest attack -target URL [-rate N | -rate 0] [-duration D] [-max-requests N] [-connections N]
//	                [-requests FILE|DIR | generator flags] [-out FILE] [-metrics URL] [-bidder URL]
//	loadtest bidder [-listen ADDR] [-latency DIST] [-late SHARE] [-bad SHARE] [-kinds LIST] ...
//	loadtest report [-json] [-html FILE] [-metrics URL] [-bidder URL] RESULTS.jsonl...
//
// # attack
//
// Open model (-rate N > 0): request i is due at start + i/N, whatever
// happened to the requests before it. Its latency is measured from that due
// time, not from when a connection became free to send it, so a target that
// stalls is charged for every request that queued behind the stall (no
// coordinated omission). A request that starts more than -late-after after
// its due time is a late send; the summary counts them and warns when more
// than 1% of a run was late, since the generator (or its connections) then
// shaped the load. Closed model (-rate 0): each connection sends its next
// request as soon as the previous answer arrived; latency is from the actual
// send, and the throughput is the target's maximum at that concurrency.
//
// Each of -connections keep-alive connections is one goroutine writing
// pre-built HTTP/1.1 requests and reading answers with fasthttp's parser.
// Latencies go to per-connection HDR histograms (1 µs to 60 s, 3 significant
// digits), merged every interval: a second, a tenth of runs under 10 s.
// Results are JSON lines (-out, default stdout): one "meta" record, one
// "interval" record per interval and one
// "summary" record, each with its histogram in the HdrHistogram V2 base64
// encoding, so runs can be merged later.
//
// Targets must be loopback addresses unless -allow-remote is given.
//
// # bidder
//
// A fake OpenRTB bidder on fasthttp. It answers every POST with bids built
// from the request (one per imp it can bid on), after a latency drawn from
// -latency, and makes -late of its answers arrive after the request's tmax.
// -bad sets the share of bad bids; each bad bid breaks exactly one rule of
// one gate of bidguard's default policy (kinds.go lists them). Every bid is
// tagged in its id and adid: ok-N, late-N (a valid bid in an answer sent
// past tmax) or bad-<kind>-N, so a client can tell what reached it. GET
// /counts returns what was sent, per tag; -counts-out writes it at exit.
//
// # report
//
// Reads the JSON lines of one or more attacks (merged as concurrent runs),
// prints throughput, answer ratios, latency percentiles, late sends, bids
// rejected per gate (from bidguard's /metrics) and bids that reached the
// client per tag, and writes an HTML page with the latency-over-time plot and
// the latency distribution. It exits 1 when a bad or late bid reached the
// client.
package main
