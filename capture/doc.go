// Package capture records a sample of the auctions serve judged, for
// `bidguard replay`: what a candidate policy would have done to real
// traffic before it ships.
//
// # Records
//
// A capture file holds one JSON object per line, members in this order:
//
//	time       the request's arrival, UTC, RFC 3339 with nanoseconds
//	upstream   the upstream that answered
//	latencyMs  the bidder's response time, in milliseconds
//	request    the exchange's bid request as received (decompressed),
//	           with the redacted paths' values replaced by null
//	response   the bidder's bid response as received (decompressed)
//	verdict    what serve made of it: the config version, action, kept,
//	           the response's verdict and one entry per decoded bid (id,
//	           seat, status, and for a failed one gate and reason)
//
// request and response are the bytes received, not re-encoded: only line
// breaks between tokens become spaces (valid JSON has none inside strings),
// so that a record is one line. Readers (Reader) skip malformed lines and
// count them.
//
// # Files
//
// The configured path is the file being written. When a record would take
// it past maxBytes it is closed and renamed "<path>.<n>", n zero-padded to
// six digits and one more than the newest such file; then the oldest
// renamed files are deleted until at most maxFiles files (the open one
// included) remain. A restart appends to an existing path.
//
// # Sampling
//
// Whether an auction is captured depends only on its request id and the
// share configured (Sampled): the 64-bit FNV-1a hash of the id, mixed by
// the SplitMix64 finaliser, its top 53 bits taken as a fraction of 2^53, is below the
// share. No key, no per-process state: every sidecar that sees an auction
// makes the same choice, so the captures of a fleet hold whole auctions.
//
// # Cost and failure
//
// The bid path (Writer.Acquire, Entry, Writer.Submit) copies a sampled
// pair's bytes into a pooled Entry and hands it to a bounded queue; it
// never blocks nor wakes the writer, which takes the queue every 10 ms, and
// a full queue drops the entry (before the copy) and counts it. Redaction,
// encoding and writing happen on the writer's goroutine. A file that cannot
// be opened or written is logged once per failure spell and counted;
// nothing stops serve. An auction that is not sampled costs one hash of its
// id and allocates nothing.
//
// capture imports only the standard library and jsonraw; cmd/bidguard
// turns the engine's verdicts into an Entry's summary.
package capture
