// Package verdictcache remembers verdicts about creatives, so that the same
// markup, bid millions of times, is read once. It knows nothing of gates or
// of the engine: a Hasher turns the bytes a reader judged, and a version
// naming everything else the verdict depends on (the policy, the reading),
// into a Key; a Cache maps Keys to small verdict values.
//
// # The key
//
// A Key is a 128-bit keyed digest of the bytes plus the version, compared
// exactly. The digest is the AES-128-GMAC tag of the bytes (GCM with the
// bytes as additional data, a fixed nonce), encrypted once more with AES
// under a second key; both keys come from crypto/rand when the Hasher is
// made, so they are per process. GHASH, under GMAC, is almost XOR-universal:
// two distinct inputs of at most L 16-byte blocks, chosen without knowing
// the key, get the same tag with probability at most (L+1)/2^128 (2^-112 at
// 1 MiB), and the final AES, a permutation, keeps that bound. That is what
// makes a cached verdict safe against a bidder who crafts an unsafe creative
// to collide with a safe one. The final AES also hides GHASH's linearity
// (bare tags of equal-length inputs satisfy T(a)^T(b)^T(c) = T(a^b^c), which
// would crowd creatives differing in a few bytes into a few buckets, and
// would let two known tags reveal the hash key): digests look random. Keys
// still never need to leave the process, and should not.
//
// Measured on the 2-core build host (Go 1.26, AES-NI and PCLMULQDQ), 20 KB
// of markup, one pass each: GMAC 2.4-3.5 µs (6-8 GB/s); hash/maphash
// 2.6-3.5 µs per 64-bit seed, so twice that for 128 bits; SHA-256 17-30 µs;
// XXH3-128 with a seed 0.6-1.2 µs, rejected: for 32-240-byte inputs it has
// seed-independent collision pairs that collide with probability about
// 2^-27 over the seed (xxHash issue 1127), which a bidder can submit at
// will. hash/maphash is no cheaper way to 128 bits either, and no safe
// one: its seeds only start a hash keyed by one AES key schedule per
// process, so a fixed pair that collides under that schedule collides
// under every seed, two "independent" seeds included (golang/go#81604: a
// 15- and a 16-byte message collide in about one process in 2^24), and it
// has no proven bound at all. So the digest is most of a hit's cost and
// grows with the markup; the lookup itself is about 40 ns. On the
// 300-500-byte creatives most bids carry the digest is 120-150 ns
// (BenchmarkSum), most of it fixed: two AES blocks (GCM's tag mask, the
// final encryption) and the tag buffer's pool, around GHASH's 30 ns.
//
// # The cache
//
// A Cache holds at most Capacity entries, fixed when it is made: memory does
// not grow after New. It is set-associative: a key's bits pick one of up to
// 64 shards, each behind its own mutex, and two buckets of eight entries in
// it; the key lives in either. A new key goes to the emptier bucket; when
// both are full, the one with fewer recently read entries evicts by CLOCK:
// its hand passes over entries read since its last visit, clearing their
// mark, and replaces the first unmarked one. A new entry starts unmarked, so
// creatives seen once make room before those seen again. Evictions start
// when the fullest buckets fill, at about three quarters of Capacity. On a
// Zipf mix the hit rate is within a fraction of a point of an exact LRU of
// the same size (BenchmarkStream). An entry takes its Key (24 bytes), its
// value, a byte of state and a byte of tag (a byte of the key that picks
// no bucket: a lookup compares full keys only where the tag matches, so a
// miss, the lookup of a creative never seen, reads a bucket's first bytes
// only; BenchmarkMiss 69 → 52 ns): 32 bytes for a 6-byte verdict, 3.2 MB
// for 100,000. Get and Put never allocate. Counters of hits, misses and
// evictions are read atomically with Stats.
package verdictcache
