package quarantine

import (
	"sort"
	"sync"
	"sync/atomic"
)

// numShards is the number of locks new seats are created under.
const numShards = 16

// table holds the tracked seats by the 64-bit hash of their key. The bid
// path finds a known seat in an immutable map behind an atomic pointer: no
// lock. A seat not in it yet is created under the lock of one of numShards
// shards (only the bids of a new seat, until the next tick, take it), and
// the detector's goroutine folds the shards into a new map at every tick.
// At most max seats are tracked; a full table takes no new seat (it counts
// the bids it turned away), and the detector evicts the least recently seen
// seats.
type table struct {
	index  atomic.Pointer[map[uint64]*Seat]
	shards [numShards]shard
	size   atomic.Int64
	max    atomic.Int64  // Settings.MaxSeats
	full   atomic.Uint64 // bids of seats the full table could not take
}

type shard struct {
	mu sync.Mutex
	m  map[uint64]*Seat
	_  [48]byte // one lock per cache line
}

func (t *table) init(max int) {
	t.max.Store(int64(max))
	empty := map[uint64]*Seat{}
	t.index.Store(&empty)
	for i := range t.shards {
		t.shards[i].m = map[uint64]*Seat{}
	}
}

func (t *table) lookup(h uint64) *Seat { return (*t.index.Load())[h] }

// create returns the seat of hash h, creating it with key() when the table
// has room; nil when it has none.
func (t *table) create(h uint64, mk func() *Seat) *Seat {
	sh := &t.shards[h%numShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.m[h]; s != nil {
		return s
	}
	if s := t.lookup(h); s != nil { // folded into the index meanwhile
		return s
	}
	if t.size.Add(1) > t.max.Load() {
		t.size.Add(-1)
		t.full.Add(1)
		return nil
	}
	s := mk()
	sh.m[h] = s
	return s
}

// rebuild folds the seats created since the last rebuild into a new index,
// leaving out drop, and returns every seat sorted by key: list (the seats
// of the current index, sorted; reused) without drop, merged with the new
// seats, sorted alone.
func (t *table) rebuild(drop map[*Seat]bool, list []*Seat) []*Seat {
	for i := range t.shards {
		t.shards[i].mu.Lock()
	}
	defer func() {
		for i := range t.shards {
			t.shards[i].mu.Unlock()
		}
	}()
	fresh := 0
	for i := range t.shards {
		fresh += len(t.shards[i].m)
	}
	if fresh == 0 && len(drop) == 0 {
		return list
	}
	old := *t.index.Load()
	m := make(map[uint64]*Seat, len(old)+fresh)
	for h, s := range old {
		if !drop[s] {
			m[h] = s
		}
	}
	kept := list[:0]
	for _, s := range list {
		if !drop[s] {
			kept = append(kept, s)
		}
	}
	added := make([]*Seat, 0, fresh)
	for i := range t.shards {
		for h, s := range t.shards[i].m {
			m[h] = s
			added = append(added, s)
		}
		clear(t.shards[i].m)
	}
	t.index.Store(&m)
	t.size.Store(int64(len(m)))
	sort.Slice(added, func(i, j int) bool { return added[i].key < added[j].key })
	// Merge from the back, in place.
	i, j := len(kept)-1, len(added)-1
	kept = append(kept, added...)
	for k := len(kept) - 1; j >= 0; k-- {
		if i >= 0 && kept[i].key > added[j].key {
			kept[k], i = kept[i], i-1
		} else {
			kept[k], j = added[j], j-1
		}
	}
	return kept
}
