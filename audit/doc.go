// Package audit is bidguard's tamper-evident audit log (docs/design.md
// "Audit log"): the record format, the hash chain, the writer and verification.
// It imports only the standard library; cmd/bidguard turns the engine's
// verdicts into records.
//
// # Records
//
// One JSON line per record, every field present, in this order: v, seq, ts,
// kind, req_id, seat, bid_id, crid, adomain, price_micros, gate, reason,
// nbr, loss, policy, prev, mac. The line is canonical: the verifier
// re-encodes what it decoded and refuses a line that differs by one byte,
// so a change that JSON would read the same (key case, escapes, spaces) is
// still a break. ts is UTC with nine fractional digits; prev and mac are
// 64 lowercase hex digits; price_micros is the bid price in millionths of
// the response currency. Strings are clipped when handed in (MaxID,
// MaxReason, MaxPolicy bytes, at most MaxDomains adomain entries) and
// invalid UTF-8 becomes U+FFFD before the MAC is taken.
//
// mac = HMAC-SHA256(key, encoding) with the key of audit.keyFile, or
// SHA-256(encoding) without one, where encoding is a length-prefixed
// serialisation of every other field, prev included (appendMACInput). prev
// is the mac of the record before; the first record of a log has seq 1 and
// a zero prev.
//
// Writer-made records: segment (the first line of every segment file;
// reason is the segment number; its prev is the previous segment's last
// mac), gap (reason "<n> records dropped": the exact number of records the
// bid path could not queue, or the writer could not write, since the last
// gap record), recovered (reason "<n> bytes truncated": a torn tail removed
// when the log was opened). The producers' kinds are reject and shadow
// (the bid path), config, quarantine and release (control records).
//
// # Segments
//
// The configured path is segment 1; segment n ≥ 2 is "<path>.<n>" with n
// zero-padded to six digits. A segment is closed, fsynced, and the next one
// begun once it holds segmentBytes bytes. Files are never renamed. Each
// process holds an exclusive flock on the segment it appends to: a second
// serve on the same path fails to start; check waits for the lock.
//
// # Writing
//
// One writer goroutine owns the chain. The bid path calls Enqueue, which
// copies the record into a slot of a bounded lock-free ring (Queue slots)
// and never blocks; a full ring drops the record and counts it. The writer
// frees a slot only after its line was handed to write(2), so records
// accepted and not yet written never exceed Queue; a record is written
// once write(2) returned, and durable once an fsync begun after that
// returned. An fsync begins every FsyncEvery written records, or 100 ms
// after a write, when none is in flight; it runs on a goroutine of its own,
// so the writer never waits for the disk (except to close a segment).
// Encoding and hashing happen on the writer goroutine. Control records
// (Append) wait in an unbounded list and are never dropped for lack of
// room.
//
// A write that fails, or a panic in the writer, drops the batch (counted,
// and covered by the next gap record) and the writer reopens the log from
// the file, so the chain always continues from what the file holds.
//
// # Recovery
//
// Open truncates a torn tail, the bytes after the newest segment's last
// line end (kill -9 in the middle of a write), records it as a recovered
// record, and continues the chain from the last complete record, whose mac
// must verify with the key: a key change or a damaged last record stops
// Open rather than fork the chain. Complete lines are never removed.
//
// # What a chain proves
//
// Verification shows that the records between the first and the last given
// were not changed, removed, reordered or inserted by someone without the
// key. It cannot show that the newest records were not cut off, nor stop
// whoever holds the key (or, without a key, anyone) from writing a whole
// new chain: anchor the head (seq, mac) outside the host for that.
package audit
