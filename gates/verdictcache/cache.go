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
	mu sync.Mutex
	// Bucket i is heads[i] and slots[i]: the heads, a sixteenth of the
	// memory, apart, so that a miss reads a head only.
	heads []head
	slots []slots[V]

	entries   atomic.Int64 // written under mu
	hits      atomic.Uint64
	misses    atomic.Uint64
	evictions atomic.Uint64
	_         [64]byte // keeps neighbouring shards' hot fields apart
}

// A bucket holds up to ways entries: its head says which ways hold one
// and what their tags are, its slots hold their keys and values. Bit i of
// used says way i holds an entry, bit i of ref that it was read since the
// CLOCK hand last passed it. tags[i] is tagOf(keys[i]): a lookup compares
// the keys of matching tags only, so that one of a key the bucket does not
// hold (most lookups of a cache of distinct creatives) reads its head and
// no key. The heads are an array of their own, 16 bytes each, four to a
// cache line: a sixteenth of a cache of 2-byte verdicts, they stay in the
// processor's caches where the whole would not.
type head struct {
	used, ref, hand uint8
	tags            [ways]uint8
	_               [16 - 3 - ways]uint8
}

type slots[V any] struct {
	keys [ways]Key
	vals [ways]V
}

// bucket is a view of bucket i of a shard.
type bucket[V any] struct {
	*head
	*slots[V]
}

// tagOf is a byte of k that picks neither its shard nor its buckets.
func tagOf(k Key) uint8 { return uint8(k.Hi >> 56) }

// set stores k and v in way i.
func (b bucket[V]) set(i int, k Key, v V) {
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
		c.shards[i].heads = make([]head, per)
		c.shards[i].slots = make([]slots[V], per)
	}
	return c, nil
}

// Capacity is the most entries the cache holds.
func (c *Cache[V]) Capacity() int { return len(c.shards) * int(c.buckets) * ways }

// Bytes is the memory the entries take, fixed at New.
func (c *Cache[V]) Bytes() int {
	perBucket := int(unsafe.Sizeof(head{}) + unsafe.Sizeof(slots[V]{}))
	return len(c.shards) * (int(c.buckets)*perBucket + int(unsafe.Sizeof(shard[V]{})))
}

// locate returns k's shard and its two candidate buckets there (the same
// one when the shard has one). The digest bits are uniform: the low half of
// Lo picks the shard, the high half of Lo and the low half of Hi the
// buckets. Two choices keep buckets from overflowing while the cache as a
// whole has room.
func (c *Cache[V]) locate(k Key) (s *shard[V], i1, i2 uint64) {
	s = &c.shards[(k.Lo&0xffffffff)*uint64(len(c.shards))>>32]
	return s, (k.Lo >> 32) * c.buckets >> 32, (k.Hi & 0xffffffff) * c.buckets >> 32
}

// bucket is bucket i of s.
func (s *shard[V]) bucket(i uint64) bucket[V] { return bucket[V]{&s.heads[i], &s.slots[i]} }

// find returns the way of bucket i of s holding k, or -1: the head is read,
// and the keys whose tags match.
func (s *shard[V]) find(i uint64, k Key) int {
	h := &s.heads[i]
	t := tagOf(k)
	for m := h.used; m != 0; m &= m - 1 {
		if w := bits.TrailingZeros8(m); h.tags[w] == t && s.slots[i].keys[w] == k {
			return w
		}
	}
	return -1
}

// Get returns the value stored under k, and whether there is one.
func (c *Cache[V]) Get(k Key) (V, bool) {
	s, i1, i2 := c.locate(k)
	s.mu.Lock()
	b, i := i1, s.find(i1, k)
	if i < 0 && i2 != i1 {
		b, i = i2, s.find(i2, k)
	}
	if i < 0 {
		s.mu.Unlock()
		s.misses.Add(1)
		var zero V
		return zero, false
	}
	s.heads[b].ref |= 1 << i
	v := s.slots[b].vals[i]
	s.mu.Unlock()
	s.hits.Add(1)
	return v, true
}

// Put stores v under k, replacing k's value if it is present. A new entry
// goes to the emptier of k's buckets; when both are full, the one with
// fewer entries read since the hand passed evicts the entry its CLOCK hand
// stops at.
func (c *Cache[V]) Put(k Key, v V) {
	s, i1, i2 := c.locate(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.find(i1, k); i >= 0 {
		s.slots[i1].vals[i] = v
		return
	}
	if i := s.find(i2, k); i >= 0 {
		s.slots[i2].vals[i] = v
		return
	}
	b1, b2 := s.bucket(i1), s.bucket(i2)
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
