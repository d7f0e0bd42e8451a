// Command loadtest is bidguard's load-test harness: a constant-rate load
// generator, a fake bidder and a report. It talks HTTP only and imports no
// bidguard package, so it measures bidguard, nginx or any other proxy the
// same way.
//
//	loadtest attack -target URL [-rate N | -rate 0] [-duration D] [-max-requests N] [-connections N]
//	                [-requests FILE|DIR | generator flags] [-out FILE] [-metrics URL] [-bidder URL]
//	loadtest bidder [-listen ADDR] [-latency DIST] [-late SHARE] [-bad SHARE] [-kinds LIST]
//	                [-bids DIST] [-seats N] [-seats-per-response DIST] [-price-median M] [-price-sigma S] [-seed N] ...
//	loadtest report [-json] [-html FILE] [-metrics URL] [-bidder URL] RESULTS.jsonl...
//	loadtest seats -n N -out DIR [-distinct K]
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
// Generated requests (no -requests) are display requests (a site, banner,
// video and native imps) and, with -gen-ctv SHARE, CTV requests: an app on
// a connected TV whose video imps come in ad breaks (OpenRTB 2.6 pods): a
// structured pod of three slots with rqddurs, a dynamic pod (poddur,
// maxseq), a hybrid pod and an instream imp outside any pod, each with
// protocols, mimes and a per-second floor (mincpmpersec).
//
// # bidder
//
// A fake OpenRTB bidder on fasthttp. It answers every POST with bids built
// from the request, after a latency drawn from -latency, and makes -late of
// its answers arrive after the request's tmax. Answers look like traffic:
//
//   - -bids: bids per answer: imps (the default: one per imp it can bid
//     on), N, A-B (uniform) or geo:MEAN (geometric, 1 the most likely),
//     spread over the imps in turn. The count is exact, bad bids included,
//     except on dynamic pods: valid bids a full pod has no room for are
//     left out, and the pod kinds add the valid bids they need first.
//     A 1,000-bid answer to a three-imp display request is about 730 KB
//     and costs the bidder about 1.5 ms of CPU (BenchmarkAnswer1000).
//   - -seats N: the seat pool, seat-00001 .. seat-N (zero-padded to at
//     least five digits, up to 1,000,000 seats); -seats-per-response: all
//     (the default: as many seats as bids, up to N), N, A-B or geo:MEAN.
//     An answer's seats are consecutive seats of the pool from a random
//     one; bid j goes to its seat j mod the count.
//   - -price-median M and -price-sigma S: a valid bid's price is
//     lognormal, M times its reference price (the imp's floor, or the
//     per-second floor times the duration when higher; 1 without either)
//     with ln(price/median) of standard deviation S, raised to the floor
//     and lowered to 50 × the floor (bidSanity's default) when a draw falls
//     outside, in whole micro-units. Bid n's price is a function of
//     (-seed, n), and answer n's draws (bid count, seats, bad kinds) of
//     (-seed, n): a run with one connection is reproducible.
//   - Video and audio imps get valid answers that fit their media object
//     (ctv.go): dur and the inline VAST Duration in rqddurs or within
//     minduration..maxduration and the pod's poddur, a VAST version
//     (2.0 to 4.3, inline or wrapper) whose protocol code is in protocols,
//     a MediaFile type from mimes, a price at or over mincpmpersec × dur,
//     mtype 2 (3 for audio), no slotinpod; on a dynamic pod no more valid
//     bids than maxseq and poddur hold together, one advertiser per bid and
//     distinct categories among bids that can share a break, so they pass
//     podCompliance even with podFit: all and exclusive: [adomain, cat].
//
// -bad sets the share of bad bids; each bad bid breaks exactly one rule of
// one gate (kinds.go and ctv.go list them; -list-kinds prints them). Kinds
// of gates not in the embedded default policy are pending: -kinds default
// leaves them out, -kinds all or a list names them. The video kinds
// (video-negative-dur, video-dur-mismatch, video-dur-rqddurs,
// video-dur-range, video-protocol, video-bid-protocol, video-mime,
// video-below-floor) target rtb.video-compliance and the pod kinds
// (pod-slot, pod-too-long, pod-overfill, pod-adomain, pod-cat)
// rtb.pod-compliance; pod-overfill is bad only with podFit: all,
// pod-adomain and pod-cat only with exclusive listing adomain or cat (the
// GATE OPTION NEEDED column of -list-kinds). Every bid is tagged in its id
// and adid: ok-N, late-N (a valid bid in an answer sent past tmax) or
// bad-<kind>-N, so a client can tell what reached it, and the bidder's
// counts map each bad tag to its gate, so a report counts them per gate.
// GET /counts returns what was sent, per tag; -counts-out writes it at
// exit.
// -tls-listen serves bid requests over TLS as well, on a second address
// (-tls-cert, -tls-key; -tls-client-ca requires a client certificate that
// CA signed): the TLS upstream of the comparison runner.
//
// # seats
//
// Writes DIR/seat-00001.yaml .. seat-N.yaml for bidguard's seatsDir, the
// names the bidder's -seats N sends: each file names its seat and changes
// one option of one inherited gate (gateOptions: bidSanity's maxPrice,
// markupSafety's maxAdmBytes or urlSafety's extraInternalNames, in turn),
// with values distinct per seat, or shared among -distinct K groups, so
// the fake bidder's valid bids still pass. Earlier seat-*.yaml files in
// DIR are removed first.
//
// # Scenarios
//
// `make loadtest` runs bench/run's badmix; LOADTEST_ARGS passes its flags,
// -bidder-args and -attack-args pass more flags to the bidder and the
// attack, and -seats-dir sets bidguard's seatsDir:
//
//	# 1,000-bid answers (bidguard's limits.maxBids) from 10,000 seats
//	make loadtest LOADTEST_ARGS='-rate 50 -bidder-args "-bids 1000 -seats 10000"'
//	# 10,000 seat policies, each overriding one gate option, under traffic from those seats
//	make build && bin/loadtest seats -n 10000 -out bench/out/seats10k
//	make loadtest LOADTEST_ARGS='-seats-dir bench/out/seats10k -bidder-args "-seats 10000 -bids 1-20"'
//	# CTV traffic: video imps in pods, valid answers only (the default kinds)
//	make loadtest LOADTEST_ARGS='-attack-args "-gen-ctv 0.5 -gen-imps 1-8" -bidder-args "-bids 1-20 -seats 1000"'
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
