package gates

// The markup gates' verdict cache. The same creative is bid many times, so
// what gates/markup reads in an adm is kept, shared by markupSafety and
// secureMarkup: one reading per creative (markup.Read finds both gates'
// facts at once), then a digest and a lookup per bid.
//
// The key is a keyed 128-bit digest of the adm (verdictcache: random keys
// per process, so no one can aim a collision) with everything else the
// reading depends on: the reading chosen (HTML, VAST, native, or sniffed)
// and the limits. That is all a verdict depends on, so a config reload that
// leaves the limits alone keeps the cache warm, and one that changes them
// never reads a verdict made under the old ones. The cache's memory is fixed
// (markupCacheEntries entries, 30 bytes each); CLOCK eviction drops
// creatives seen once first.
//
// Within a request the second gate takes the first's verdict from the bid's
// engine.Memo, keyed by the adm's address and length (the bytes do not
// change while a request is judged) and the same version: no digest, no
// lookup.
//
// The cache pays only when creatives come back: a lookup of a creative
// never seen (a digest, a miss and a store into a table of megabytes, whose
// lines are cold) costs about a third of reading a small creative under
// load, and creatives that carry per-impression ids are new at every bid.
// So a valve (cacheValve) weighs, over windows of lookups, the reading time
// the hits saved (each entry keeps the time its reading took) against what
// the lookups cost, and turns the cache off while it does not pay. Off, one
// creative in sixteen, chosen by a cheap hash of its bytes so that a
// creative is always or never chosen, still goes through the cache: that
// sample measures what the cache would save, and turns it back on when
// creatives start coming back. The valve changes costs only: every verdict
// is the reading's, cached or not.

import (
	"hash/maphash"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/bidguard/bidguard/gates/verdictcache"
)

// markupCacheEntries is the verdict cache's capacity: 131,072 creatives,
// about 4 MB.
const markupCacheEntries = 1 << 17

// markupVerdict is what the readers found in one adm, and what reading it
// cost (in costUnit, saturating): what a hit saves.
type markupVerdict struct {
	finding  markup.Finding
	insecure bool
	cost     uint16
}

// costUnit is the unit of markupVerdict.cost: up to 4.2 ms.
const costUnit = 64 * time.Nanosecond

// The valve's model of a lookup's cost, measured under load (a profile of
// serve, the load harness's distinct creatives): a miss's digest, lookup and
// store about 700 ns on 300-600-byte creatives, the digest growing by about
// a quarter of a nanosecond a byte.
const (
	lookupFixed   = 600 * time.Nanosecond
	lookupPerByte = 4 // bytes per nanosecond of digest
)

const (
	// valveWindow is the lookups over which the valve weighs the cache.
	valveWindow = 1024
	// valveSample: off, a creative goes through the cache when its cheap
	// hash is 0 modulo valveSample.
	valveSample = 16
)

// markupReader reads creatives through a verdict cache and its valve.
type markupReader struct {
	hasher *verdictcache.Hasher
	cache  *verdictcache.Cache[markupVerdict]
	valve  cacheValve
}

// cacheValve decides whether readings go through the cache. Its counters
// are statistics: a lookup counted in the next window instead of this one
// changes nothing that matters.
type cacheValve struct {
	// off is read by every reading and written at most once a window: it
	// has a cache line of its own, so that the counters below, written by
	// the readings of every core, do not take it from the cores reading it.
	off      atomic.Bool
	_        [63]byte
	lookups  atomic.Int64 // in the window
	saved    atomic.Int64 // ns of reading the window's hits saved
	spent    atomic.Int64 // ns the window's lookups cost (the model)
	bypassed atomic.Uint64
	seed     maphash.Seed
}

var markupReads = newMarkupReader(markupCacheEntries)

func newMarkupReader(entries int) *markupReader {
	c, err := verdictcache.New[markupVerdict](entries)
	if err != nil {
		panic(err) // unreachable: callers pass a valid constant
	}
	return &markupReader{hasher: verdictcache.NewHasher(), cache: c, valve: cacheValve{seed: maphash.MakeSeed()}}
}

// readMarkup returns what the readers find in adm under reading r (0: the
// readings markup.Sniff finds) and limits lim: from the bid's memo when an
// earlier gate read the same, else through the verdict cache.
func readMarkup(m *engine.Memo, adm []byte, r markup.Reading, lim markup.Limits) markupVerdict {
	version := markupCacheVersion(r, lim)
	key := [3]uint64{uint64(uintptr(unsafe.Pointer(unsafe.SliceData(adm)))), uint64(len(adm)), version}
	if m.Key == key {
		return unpackVerdict(m.Value)
	}
	v := markupReads.read(adm, r, lim, version)
	m.Key, m.Value = key, packVerdict(v)
	return v
}

func packVerdict(v markupVerdict) uint64 {
	b := uint64(0)
	if v.insecure {
		b = 1
	}
	return uint64(v.finding) | b<<8 | uint64(v.cost)<<16
}

func unpackVerdict(x uint64) markupVerdict {
	return markupVerdict{finding: markup.Finding(x), insecure: x>>8&1 != 0, cost: uint16(x >> 16)}
}

// read reads adm, through the cache unless the valve is off and adm is not
// in its sample.
func (mr *markupReader) read(adm []byte, r markup.Reading, lim markup.Limits, version uint64) markupVerdict {
	va := &mr.valve
	if va.off.Load() && !va.sampled(adm) {
		va.bypassed.Add(1)
		return readPlain(adm, r, lim) // no cost: nothing will weigh it
	}
	k := mr.hasher.Sum(version, adm)
	v, hit := mr.cache.Get(k)
	if !hit {
		v = readTimed(adm, r, lim)
		mr.cache.Put(k, v)
	}
	va.count(len(adm), hit, v.cost)
	return v
}

// sampled reports whether adm is in the valve's sample: its bytes, all of
// them, hashed with the valve's seed are 0 modulo valveSample. The same
// bytes are always or never in it, and creatives of one template that
// differ by an id fall in it one in valveSample. maphash.Comparable hashes
// a string in one call of the runtime's hash (maphash.Bytes feeds it 128
// bytes at a time: about 250 instructions more on a 300-byte creative).
func (va *cacheValve) sampled(adm []byte) bool {
	return maphash.Comparable(va.seed, unsafe.String(unsafe.SliceData(adm), len(adm)))%valveSample == 0
}

// readTimed reads adm and notes what the reading cost.
func readTimed(adm []byte, r markup.Reading, lim markup.Limits) markupVerdict {
	start := time.Now()
	v := readPlain(adm, r, lim)
	v.cost = costOf(time.Since(start))
	return v
}

// readPlain reads adm (0: the readings markup.Sniff finds).
func readPlain(adm []byte, r markup.Reading, lim markup.Limits) markupVerdict {
	if r == 0 {
		r = markup.Sniff(adm)
	}
	f, insecure := markup.Read(adm, r, lim)
	return markupVerdict{finding: f, insecure: insecure}
}

// costOf is a reading time d in costUnit, saturating.
func costOf(d time.Duration) uint16 { return uint16(min(d/costUnit, 1<<16-1)) }

// lookupCost is the valve's model of a lookup of n bytes.
func lookupCost(n int) time.Duration { return lookupFixed + time.Duration(n/lookupPerByte) }

// count adds a lookup of n bytes to the window; the lookup that ends the
// window weighs it: the cache turns off when its hits saved less than its
// lookups cost, and on when they saved at least as much.
func (va *cacheValve) count(n int, hit bool, cost uint16) {
	va.spent.Add(int64(lookupCost(n)))
	if hit {
		va.saved.Add(int64(cost) * int64(costUnit))
	}
	if va.lookups.Add(1) != valveWindow {
		return
	}
	saved, spent := va.saved.Swap(0), va.spent.Swap(0)
	va.lookups.Store(0)
	va.off.Store(saved < spent)
}

// markupCacheVersion packs what besides the bytes a verdict depends on:
// the reading (8 bits), MaxDepth (at most 64: 8 bits), MaxDecodedBytes (at
// most markup.MaxDecodedBytesLimit: under 2^48).
func markupCacheVersion(r markup.Reading, lim markup.Limits) uint64 {
	return uint64(r) | uint64(lim.MaxDepth)<<8 | uint64(lim.MaxDecodedBytes)<<16
}

// MarkupCacheStats reads the verdict cache's counters (for metrics).
func MarkupCacheStats() verdictcache.Stats { return markupReads.cache.Stats() }

// MarkupCacheValve reads the valve: whether every reading goes through the
// verdict cache (on), and the readings that did not since start (for
// metrics).
func MarkupCacheValve() (on bool, bypassed uint64) {
	return !markupReads.valve.off.Load(), markupReads.valve.bypassed.Load()
}
