// Package jsonraw is bidguard's one toolkit for raw JSON bytes: the
// validating pass every document goes through before anything reads it, the
// tokenizer that reads validated documents in place (skip space, string or
// value; iterate an object's members or an array's elements), encoding/json's
// rule for matching object keys to names, its escape decoding, and the
// writers that produce JSON exactly as encoding/json writes it.
//
// # Two kinds of functions
//
// Validate is strict: it accepts exactly the documents encoding/json accepts
// (RFC 8259 syntax, one value, only whitespace after it) and, beyond that,
// rejects nesting deeper than MaxDepth and any number that overflows float64
// wherever it stands (docs/gates.md, "Decoding"). It records whether the
// strings held invalid UTF-8, which encoding/json tolerates, and escaped
// UTF-16 surrogates. ValidateTokens also records every token it passed
// (offsets, kind, escaped or not, and for an object or array where it ends
// and which token follows it), so that the readers that need the whole
// document again (the engine's decoder and scan table) walk the tokens
// instead of the bytes: one pass over the bytes per document. ScanString
// and ScanNumber are Validate's own scans of one string or number, for a
// reader that validates as it goes and checks the grammar around them
// itself (the engine's direct decoder of bid requests).
//
// The readers (SkipSpace, StringEnd, ValueEnd, Object and Members, Array
// and Elements, Lookup, IsNull, KeyIs, Keys, Rune, Hex4, NeedsUnescape,
// Unescape, StringLen, Float, Int) read documents that Validate accepted, or
// values cut from them, and do not re-check syntax. On malformed input they
// never panic and never read out of bounds: they stop and report "not
// found" (-1, false).
//
// The writers append to a caller's buffer: AppendString and AppendFloat
// exactly what encoding/json writes, AppendValidUTF8 raw JSON with its
// invalid UTF-8 escaped as \ufffd.
//
// # Keys
//
// Object keys match names as encoding/json matches them to struct fields:
// escapes resolved, an exact match preferred, else Unicode simple case
// folding ("DSA", "dſa" and "\u0064sa" all match "dsa"). Names are ASCII.
// Where a key occurs more than once, the last occurrence wins (Lookup).
//
// # Strings
//
// Unescape and Rune decode as encoding/json does: a lone or reversed UTF-16
// surrogate escape, and each byte of invalid UTF-8, become U+FFFD.
// AppendString writes a string as encoding/json does with SetEscapeHTML(false).
//
// # Cost
//
// One pass over the bytes, branching per token rather than per byte:
// strings are scanned eight bytes at a time to the next quote, backslash,
// control or non-ASCII byte (the usual escapes, of a quote, slash or
// backslash, without leaving that loop), the usual key, short string and
// short integer are each read in one word without a call, and
// ValidateTokens writes each token in place into the caller's buffer. On
// the benchmarks' typical documents (BenchmarkValidateTokens, one core of a
// shared 2-core machine, fastest runs) ValidateTokens takes about 1.4 µs for
// the 970-byte request and 1.9 µs for the 2.2 KB response, about 22,000 and
// 26,000 instructions (cachegrind), Validate alone about the same; the
// same documents without whitespace (-compact, as exchanges send them) take
// 5 to 8% fewer instructions. Keys matches a key written as a name in
// about one comparison of two words (its table's multiplier is chosen by
// NewKeys; a key cut from its document is read in one load); only other
// keys are unescaped and folded. UnescapeValid copies eight bytes at a
// time.
//
// # Allocation and concurrency
//
// Nothing in this package allocates except Validate's error values, and the
// Keys table built once by NewKeys. Functions are pure; a Keys table is
// immutable and safe for concurrent use. Values returned are subslices of the
// input: they live as long as it does and must not be modified.
package jsonraw
