// Package engine is bidguard's judging core: the gate contract (Gate and its
// kinds, Verdict), policy compilation of a config.Config into immutable
// snapshots, the decode rules for bid requests and responses, and the
// budgeted run that turns a (request, response) pair into an Outcome.
//
// Lifetimes: a Snapshot is immutable and shared by every request that took
// it. An Eval is pooled per-request state (AcquireEval / ReleaseEval); its
// Input, Bids and Outcome must not be retained after release.
//
// A seat policy holds only what differs from the default policy (intern.go):
// a GateEntry, and its Gate, is shared by every seat that configures it
// alike, and CompileFrom reuses from the snapshot in use the gates and
// entries whose options did not change (not those that read a file), and
// whole seat policies whose seat was decoded from unchanged text
// (config.SeatConfig.Origin) over an unchanged default policy. A GateEntry thus
// identifies a gate as configured, not a policy: the policy that judged a
// bid is its verdict's Policy.
//
// # Decoded values alias the documents
//
// DecodeRequest and DecodeResponse decode into structs, slices and strings
// the Eval owns and reuses: strings that need no unescaping point into the
// document bytes themselves (json.RawMessage values and Bid.Raw too), the
// others into the Eval's arena. Hence two rules:
//
//   - The bytes given to DecodeRequest and DecodeResponse must stay alive
//     and unmodified until the Eval is released (rtb releases the Eval
//     before it gives back its request and response buffers).
//   - Nothing decoded may be retained after ReleaseEval: not a string, not
//     a slice, not a pointer into the messages, not Body's bytes. Whatever
//     must outlive the request (audit records, rejection log lines, anything
//     queued for another goroutine) copies what it keeps (strings.Clone,
//     bytes.Clone) before the Eval is released. Check's Report holds a
//     copy of the answer body, but its reasons and details may alias the
//     Eval: use the Report before releasing the Eval Check returned.
//
// # Reading an outcome
//
// After Eval.Run the Outcome holds one verdict per decoded bid
// (Outcome.Bids, indexed like Input.Bids, so Bids[i] is the verdict on bid
// i) and one on the response as a whole (Outcome.Response). A verdict
// (Judgement) is passed, rejected by a gate (Rejection: the gate's
// GateEntry, its name, reason, loss and seat-non-bid codes), a would-be
// rejection under action: shadow, and/or warned by gates in mode: warn; a
// bid's verdict also says whether it is kept. Readers recognise a gate by
// identity (the GateEntry, GateEntry.EnforcesQuarantine for the
// QuarantineGate), never by comparing names. The hit lists Rejected and
// Warned record each listed hit for check's JSON, the audit log, the
// rejection log and seatNonBid (Outcome.Hit walks them); nothing derives a
// verdict from them. Reading an outcome allocates nothing.
//
// Decoding follows encoding/json exactly (same documents accepted, same
// values; FuzzDecodeRequestDifferential, FuzzDecodeResponseDifferential)
// after jsonraw.Validate has checked the whole document.
//
// Allocation: once an Eval is warm, decoding the pair, the pass path of
// Eval.Run and Body allocate nothing (TestDecodeRunBodyAllocs), nor does
// the typical reject path once the hit lists have grown
// (TestOutcomeAllocs). Reason strings with numbers and details are built
// only when a gate fails.
//
// The engine knows OpenRTB types, not HTTP (upstream URLs are the config's
// and rtb's). It imports no other bidguard package but config (the model it
// compiles) and jsonraw.
package engine
