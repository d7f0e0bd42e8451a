package verdictcache

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

const (
	// ways is the number of entries in a bucket; a key may live in any of
	// its bucket's ways.
	ways = 8
	// maxShards bounds the shards, each behind its own mutex: enough that
	// cores rarely meet on one.
	maxShards = 64
	// MaxEntries is the largest capacity New accepts.
	MaxEntries = 1 << 28
)

// Cache maps Keys to values of type V (a small verdict: copied in and out).
// It is safe for concurrent use; its memory is fixed by New.
type Cache[V any] struct {
	shards  []shard[V]
	buckets uint64 // buckets per shard
}

type shard[V any] struct {
	mu      sync.Mutex
	buckets []bucket[V]

	entries   atomic.Int64 // written under mu
	hits      atomic.Uint64
	misses    atomic.Uint64
	evictions atomic.Uint64
	_         [64]byte // keeps neighbouring shards' hot fields apart
}

// bucket holds up to ways entries. Bit i of used says way i holds an entry,
// bit i of ref that it was read since the CLOCK hand last passed it. tags[i]
// is tagOf(keys[i]): a lookup compares the keys of matching tags only, so
// that one of a key the bucket does not hold (most lookups of a cache of
// distinct creatives) reads the bucket's first bytes and no key.
type bucket[V any] struct {
	used, ref, hand uint8
	tags            [ways]uint8
	keys            [ways]Key
	vals            [ways]V
}

// tagOf is a byte of k that picks neither its shard nor its buckets.
func tagOf(k Key) uint8 { return uint8(k.Hi >> 56) }

// set stores k and v in way i.
func (b *bucket[V]) set(i int, k Key, v V) {
	b.tags[i], b.keys[i], b.vals[i] = tagOf(k), k, v
}

// New returns a cache for at least entries values (Capacity says exactly
// how many: entries rounded up to whole buckets in every shard).
func New[V any](entries int) (*Cache[V], error) {
	if entries < 1 || entries > MaxEntries {
		return nil, fmt.Errorf("verdict cache entries must be 1-%d, got %d", MaxEntries, entries)
	}
	total := (entries + ways - 1) / ways
	n := min(total, maxShards)
	per := (total + n - 1) / n
	c := &Cache[V]{shards: make([]shard[V], n), buckets: uint64(per)}
	for i := range c.shards {
		c.shards[i].buckets = make([]bucket[V], per)
	}
	return c, nil
}

// Capacity is the most entries the cache holds.
func (c *Cache[V]) Capacity() int { return len(c.shards) * int(c.buckets) * ways }

// Bytes is the memory the entries take, fixed at New.
func (c *Cache[V]) Bytes() int {
	return len(c.shards) * (int(c.buckets)*int(unsafe.Sizeof(bucket[V]{})) + int(unsafe.Sizeof(shard[V]{})))
}

// locate returns k's shard and its two candidate buckets there (the same
// one when the shard has one). The digest bits are uniform: the low half of
// Lo picks the shard, the high half of Lo and the low half of Hi the
// buckets. Two choices keep buckets from overflowing while the cache as a
// whole has room.
func (c *Cache[V]) locate(k Key) (*shard[V], *bucket[V], *bucket[V]) {
	s := &c.shards[(k.Lo&0xffffffff)*uint64(len(c.shards))>>32]
	return s, &s.buckets[(k.Lo>>32)*c.buckets>>32], &s.buckets[(k.Hi&0xffffffff)*c.buckets>>32]
}

// find returns the way of b holding k, or -1.
func (b *bucket[V]) find(k Key) int {
	t := tagOf(k)
	for m := b.used; m != 0; m &= m - 1 {
		if i := bits.TrailingZeros8(m); b.tags[i] == t && b.keys[i] == k {
			return i
		}
	}
	return -1
}

// Get returns the value stored under k, and whether there is one.
func (c *Cache[V]) Get(k Key) (V, bool) {
	s, b1, b2 := c.locate(k)
	s.mu.Lock()
	b, i := b1, b1.find(k)
	if i < 0 && b2 != b1 {
		b, i = b2, b2.find(k)
	}
	if i < 0 {
		s.mu.Unlock()
		s.misses.Add(1)
		var zero V
		return zero, false
	}
	b.ref |= 1 << i
	v := b.vals[i]
	s.mu.Unlock()
	s.hits.Add(1)
	return v, true
}

// Put stores v under k, replacing k's value if it is present. A new entry
// goes to the emptier of k's buckets; when both are full, the one with
// fewer entries read since the hand passed evicts the entry its CLOCK hand
// stops at.
func (c *Cache[V]) Put(k Key, v V) {
	s, b1, b2 := c.locate(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := b1.find(k); i >= 0 {
		b1.vals[i] = v
		return
	}
	if i := b2.find(k); i >= 0 {
		b2.vals[i] = v
		return
	}
	b := b1
	if n1, n2 := bits.OnesCount8(b1.used), bits.OnesCount8(b2.used); n2 < n1 ||
		n2 == n1 && bits.OnesCount8(b2.ref) < bits.OnesCount8(b1.ref) {
		b = b2
	}
	if free := ^b.used; free != 0 {
		i := bits.TrailingZeros8(free)
		b.set(i, k, v)
		b.used |= 1 << i
		s.entries.Add(1)
		return
	}
	for {
		i := b.hand
		b.hand = (i + 1) % ways
		if b.ref&(1<<i) != 0 {
			b.ref &^= 1 << i
			continue
		}
		b.set(int(i), k, v)
		s.evictions.Add(1)
		return
	}
}

// Stats are a cache's counters since New. Hits and Misses count Gets.
type Stats struct {
	Entries, Capacity       int
	Hits, Misses, Evictions uint64
}

// Stats reads the counters atomically, shard by shard (not as one snapshot).
func (c *Cache[V]) Stats() Stats {
	st := Stats{Capacity: c.Capacity()}
	for i := range c.shards {
		s := &c.shards[i]
		st.Entries += int(s.entries.Load())
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		st.Evictions += s.evictions.Load()
	}
	return st
}
