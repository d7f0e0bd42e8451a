// Package engine is bidguard's judging core: the gate contract (Gate and its
// kinds, Verdict), the configuration model with strict decoding, policy
// compilation into immutable snapshots, the decode rules for bid requests and
// responses, and the budgeted run that turns a (request, response) pair into
// an Outcome.
//
// Lifetimes: a Snapshot is immutable and shared by every request that took
// it. An Eval is pooled per-request state (AcquireEval / ReleaseEval); its
// Input, Bids and Outcome must not be retained after release.
//
// Allocation: the pass path of Eval.Run allocates nothing (TestRunPassPathAllocs).
// Reason strings with numbers, details and the hit lists are built only when a
// gate fails.
//
// The engine knows OpenRTB types, not HTTP. It imports no other bidguard
// package but pool.
package engine
