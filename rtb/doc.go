// Package rtb is the sidecar's bid path: the fasthttp server facing the
// exchange, the upstream client, deadlines, forwarding, response rewriting and
// the bid path's metrics. It is the only product package that imports fasthttp.
//
// A Server reads the current engine.Snapshot from an engine.Holder; each
// request loads it once on arrival and keeps it to the end, so a reload
// (Holder.Store) never changes a request in flight. What the bid path derives
// from a snapshot (routes, pooled clients, metric series) is built once per
// snapshot, by New, by Install, or by the first request that sees it.
//
// Lifetimes: everything a request acquires (the engine.Eval, the fasthttp
// request and response to the bidder, pool buffers) is released before the
// handler returns and must not be retained. Server methods are safe for
// concurrent use.
//
// # HTTP decisions beyond the design
//
// Order of the checks on the exchange's request: framing (400 and close,
// before fasthttp reads the request, see below), method (405 with
// Allow: POST, whatever the path), route (404), Content-Type (415),
// Content-Encoding (415), the shutdown shed, the budget shed before
// decoding (T from the raw body's top-level tmax, or maxTmaxMs when it
// cannot be read cheaply: gzip, a tmax that is not a plain integer; such a
// request is answered 204 even if its body would not decode, since decoding
// is most of what answering it would cost), the in-flight shed (204), body
// size and decompression (413, 400), decoding (400), then the budget (204).
//
//   - Framing (framing.go): the exchange listener checks every byte against
//     a strict RFC 9112 grammar before fasthttp parses it: lines end in
//     CRLF (a bare LF or CR is an error), no obs-fold or whitespace at the
//     start of a field line, field names are tokens directly followed by
//     ':', at most one Content-Length (1-18 digits) or one
//     Transfer-Encoding whose value is "chunked", never both, chunk sizes of
//     1-8 hex digits. fasthttp alone accepts both Content-Length and chunked
//     (chunked wins), bare LFs and obs-fold: the bytes after the first
//     request would reach the bidder as a smuggled second one. The check is
//     on the raw stream rather than in the handler because fasthttp's
//     RawHeaders stops at a blank line ended by a bare LF while its field
//     scanner reads on to the next CRLFCRLF: a handler check can miss what
//     fasthttp honoured. Requests before a violation are served; the one at
//     fault is answered 400 "bad request framing: <what>" and its
//     connection closed. A violation before any byte of a request (CR or LF
//     between requests) closes the connection without an answer.
//   - Arrival: a request's deadline D runs from the kernel's receive time
//     (SO_TIMESTAMPNS) of the read holding its first byte (one recvmsg per
//     read; on a connection seen pipelining, a first recvmsg of one byte, so
//     the stamp is of the oldest unread byte), so time queued in socket
//     buffers, behind pipelined requests or for a CPU counts. Without a kernel timestamp (the first
//     packets after start, in-memory listeners) the read's own time is used.
//   - Overload (overload.go): per connection, while requests keep reaching
//     the handler after queueing more than a quarter of their T (for 20 ms
//     and more), the ones that queued that long are answered 204 at once
//     (shed reason "queue") until one arrives within that target, so a
//     pipelined backlog drains by cheap sheds; the in-flight limit in force is
//     limits.maxInFlight or the governor's lower one, which drops while the
//     mean number of requests in bidguard's own phases (the bidder's time
//     excluded) stays over queueTarget, or while more than 1% of admitted
//     requests are answered less than 1 ms before their deadline, and grows
//     back once neither holds (gauge bidguard_inflight_limit): a busy CPU
//     with short queues sheds nothing; the bidder's budget keeps, beside gateReserveMs, twice the p99 run-queue
//     latency of the last 20 ms (at most 100 ms) for the wait for a core
//     after the bidder answers.
//   - Routing is by exact match of the path fasthttp normalised (the query
//     is ignored); "/" takes every path no other upstream routes.
//   - A Content-Type header with an empty value counts as absent. Media types
//     compare case-insensitively; parameters are allowed.
//   - Request Content-Encoding: "gzip" and "x-gzip" are decoded under
//     limits.maxRequestBytes (over: 413; corrupt: 400); "identity" is no
//     encoding; anything else is 415 (unsupported content coding).
//   - The wire cap on request bodies is the maxRequestBytes of the snapshot
//     the Server started with; every request is also checked against its own
//     snapshot's limit, so a reload can lower the limit at once, while a
//     raise takes effect at the next start.
//   - Requests fasthttp cannot read get answers with a line of text too:
//     413 over the body cap, 431 for oversized headers (over 4 KiB), 408 on
//     a read timeout (a new write deadline is set first, so a request that
//     stalls on a kept-alive connection gets its 408), 400 for a framing
//     error or an unparsable request; the connection is closed after them.
//     The exchange listener's read and write timeouts are 10s; idle
//     keep-alive connections are closed after limits.idleTimeoutMs (default
//     10 s, read at start) and hold no read or write buffer meanwhile.
//   - The exchange listener retries temporary accept errors (EMFILE,
//     ENFILE, ECONNABORTED...) with back-off from 5 ms to 1 s, counted in
//     bidguard_accept_errors_total and logged at most once a second; the
//     admin listener retries them too. Connections over limits.maxConns
//     (0: DefaultMaxConns of RLIMIT_NOFILE, half of what is left after 64;
//     read per connection, so a reload applies at once) are closed at once
//     and counted in bidguard_connections_refused_total; the gauge
//     bidguard_connections_open counts the open ones.
//   - X-Bidguard-Config is on every answer of both listeners once a config is
//     loaded (the exchange listener answers 503 before that; serve never
//     listens before). X-Bidguard-Rejected is on every 200 and 204 answer to
//     a routed POST: the number of bids removed from the bidder's answer (all
//     of them for a response-level rejection, the document's bid count over
//     limits.maxBids), 0 when nothing was judged (sheds, bidder failures,
//     bidder no-bids) and under action: shadow. 4xx answers carry no
//     X-Bidguard-Rejected and a body of one line of text/plain chosen by
//     bidguard: "method not allowed: use POST", "no upstream routes this
//     path", "unsupported Content-Type: use application/json",
//     "unsupported Content-Encoding: use gzip or identity", "body over N
//     bytes", "malformed bid request: <reason>" (the decode error with
//     anything but printable ASCII replaced by spaces, cut at 200
//     characters), "bad request framing: <what>", "request headers too
//     large", "request not received in time", "malformed HTTP request".
//   - The only header taken from the bidder is Content-Type, and only when
//     it is application/json with at most a utf-8 charset; otherwise the
//     answer says application/json. No other bidder or exchange text reaches
//     a header.
//
// To the bidder (forward.go): a POST to the upstream URL's path and query,
// the exchange's query appended with forwardQuery (default true); Host
// (the URL's), User-Agent: bidguard/<version>, the headers.set lines,
// Accept-Encoding: gzip only with acceptEncoding: gzip, the exchange's
// Content-Type (application/json when it sent none, or a value with
// control or non-ASCII bytes), the exchange's end-to-end headers within
// headers.maxCount and headers.maxBytes (a header that breaks them or has
// an unsafe value is dropped whole and counted), X-Forwarded-For with the
// client's address appended, and Content-Length. Never forwarded: the
// hop-by-hop headers (RFC 9110 §7.6.1, the proxy ones), those the
// exchange's Connection header names, those bidguard writes, and the names
// of headers.remove and headers.set. The head is built without allocating.
// The body is the exchange's, decompressed, with every
// top-level member encoding/json would read as tmax (any case, escaped keys
// included) removed and "tmax":⌊B⌋ written first; every other member is
// copied byte for byte (FuzzAppendTmax). The hard deadline now + B bounds
// the dial (and TLS handshake), the write and the read.
//
// The upstream client (client.go, conn.go) is bidguard's own, over
// fasthttp's response parser. Each upstream has a pool of at most
// limits.maxInFlight keep-alive connections, each with its own buffers, kept
// across reloads while its URL, TLS settings, limits.maxInFlight and
// idleTimeoutMs are unchanged; a call through a warm pool allocates
// nothing. https upstreams (tls.go) verify against tls.caFile or the
// system's roots, present tls.certFile, resume sessions on new
// connections, measure each handshake, and read their files again when
// they change. A circuit breaker per upstream (breaker.go) answers 204 at
// once while open. Reuse:
//
//   - The most recently used idle connection that has rested 1ms since its
//     answer is reused first (any idle one when the pool is full); a
//     connection idle for upstreams[].idleTimeoutMs (default 4000; 0: no
//     keep-alive) is closed, never reused, by a timer or at the next call.
//   - Before reuse a connection is probed without blocking (recv with
//     MSG_PEEK|MSG_DONTWAIT on its socket; a read that cannot wait when it
//     has no descriptor, as in-memory listeners, or to see what the TLS
//     layer holds): EOF, an error or any unsolicited byte closes it
//     (bidguard_upstream_conns_closed_total{reason="stale"|"stray"}).
//   - After an answer it is kept only when the framing allows (a final
//     status, Content-Length or chunked, no "close" token in Connection in
//     any case, HTTP/1.0 only with keep-alive) and no byte is left in its
//     buffer (a stray second response, a CRLF: reason="stray").
//   - A request whose write fails, or whose reused connection ends before
//     any response byte, is sent once more on a new connection within the
//     same deadline (bidguard_upstream_resends_total). No other retry: a
//     fresh connection closed without an answer is kind="reset". On the wire
//     a bidder that reads a request and closes a reused connection without a
//     byte looks like an idle close racing the request: it gets the request
//     a second time.
//   - A stray response that arrives after the probe is read as the next
//     answer: no HTTP/1.1 client can tell. The rest before reuse catches a
//     stray written just after the answer; later ones carry another
//     request's id, which responseId rejects.
//   - Pools a reload no longer uses, and all pools on Shutdown, close their
//     idle connections at once and the others when their call ends.
//
// The bidder's answer:
//
//   - Interim answers 100, 102 and 103 are skipped (at most 8); any other
//     status under 200 (199, or 101 since bidguard never asks to upgrade) is
//     final, kind="http_status", and the connection is closed. 204 is a
//     no-bid. 3xx is kind="redirect" (never followed); other statuses
//     outside 2xx are kind="http_status". Any other 2xx is judged.
//   - The body is read by its framing: Content-Length, chunked (trailers
//     read and ignored), or until the bidder closes.
//   - A blank body is a no-bid. null, {} and a response without bids go
//     through the engine like any response (as `check` does) and end as a
//     no-bid 204 unless a gate that judges empty responses rejects them and
//     seatNonBid asks for a body.
//   - Content-Encoding gzip or x-gzip is decoded even when not asked for, under
//     limits.maxResponseBytes (over: kind="too_large", so a gzip bomb stops at
//     the cap; corrupt: kind="decompress"); "identity" is no encoding; any
//     other coding is kind="bad_encoding".
//   - Errors: kind="timeout" for the deadline (slow or hung bidder, dial
//     or handshake timeout); "connect" for a refused or failed dial (and no
//     free connection); "tls" for a refused handshake or a TLS alert after
//     it; "reset" for a connection closed or reset before a
//     whole answer, an answer that is not HTTP, malformed framing (broken
//     chunks, two Content-Lengths) or more than 8 interim answers;
//     "too_large" for a body over the wire cap or headers over 8 KiB;
//     "bad_json" for any decode error of docs/gates.md "Decoding".
//   - Every answer leaves by D. Once the body is read (and decompressed),
//     an answer that cannot be decoded, judged and encoded by D is dropped
//     unjudged: 204, shed_total{reason="deadline"}, outcome shed. The
//     estimate is 1ms + size × a per-byte cost that starts at 50 ns (measured
//     by BenchmarkJudgeCost) and follows what answers of 16 KiB or more cost
//     (an exponentially weighted mean, forgotten after a second without one),
//     so a loaded machine reserves more. Judging itself stops at D (the
//     engine's deadline checks).
//
// Every bidder failure answers the exchange 204 at once, so by the deadline;
// with upstreams[].onError: status it answers 504 for kind="timeout" and 502
// for every other kind instead, with X-Bidguard-Rejected: 0 and a text/plain
// line "bidder failed: <kind>", so the exchange's own bidder-error accounting
// works. No-bids, rejections and deadline drops stay 204.
//
// Rejections are logged (log.rejectionsPerSecond, default 10; 0: off): one
// line per removed bid ("bid rejected") and per warn-mode or shadow hit ("bid
// warned") with upstream, req_id, seat, bid_id, impid (bidder text clipped
// to 64 bytes), gate and reason; a response-level hit has empty seat, bid_id
// and impid. Lines over the rate are counted
// (bidguard_rejection_log_suppressed_total) and reported as suppressed=N on
// the next line written, or at Shutdown; nothing is formatted for them.
//
// Metrics (docs/design.md "Metrics"). Label values come from the config and fixed
// lists only:
//
//   - upstream="none" counts requests routed to no upstream (404, a 405 on an
//     unrouted path, requests fasthttp could not read).
//   - outcome: bid (forwarded unchanged, also under shadow), filtered,
//     no_bid (the bidder had no bid), rejected (every bid removed or the
//     response rejected, with or without a seatNonBid body), bad_request
//     (400, 404, 405, 408, 415, 431), too_large (413), shed, upstream_error,
//     panic.
//   - seat: the key of the seat policy that judged the bid ("upstream/seat"
//     or "seat"), or the seat as sent when quarantine.seats lists it, else
//     "other". bids_total verdicts are exclusive per bid: rejected (removed),
//     warned (forwarded with a warn-mode or shadow hit), passed (forwarded
//     clean). bids_rejected_total counts each removed bid once, with the gate
//     that removed it (a response-level rejection: each bid with that gate;
//     over maxBids: seat="other", gate="limits.maxBids").
//   - Beyond docs/design.md's table: shed_total{reason="deadline"} (answers
//     too large to judge by D), bidguard_upstream_resends_total{upstream},
//     bidguard_upstream_conns_closed_total{reason="idle"|"stale"|"stray"}
//     and bidguard_rejection_log_suppressed_total.
//   - gate_duration_seconds observes every gate that ran (a skip without
//     measured time is not observed) in one judged response out of 16 (the
//     first, then every 16th: see gateSampleEvery), so its _count counts
//     sampled responses; upstream_duration_seconds observes every call
//     made, failed ones included.
//
// Drain, the first phase of serve's shutdown, turns /healthz and /readyz to
// 503 while both listeners keep serving; exchange answers then carry
// Connection: close. Shutdown turns /healthz and /readyz to 503, stops
// accepting, and answers
// requests that still arrive on open connections with an immediate 204
// (shed reason "shutdown") and Connection: close; requests in flight finish
// and their answers close their connections too. Idle connections stay open
// for Options.Drain (1 s) so that a request already sent on one is answered
// rather than refused; then they are closed. A panic is answered 204 and
// counted by where it happened (gate, upstream, handler); the request's
// pooled state is left to the garbage collector and the report is logged at
// most once a second.
package rtb
