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
// (markupCacheEntries entries, 28 bytes each); CLOCK eviction drops
// creatives seen once first.

import (
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/bidguard/bidguard/gates/verdictcache"
)

// markupCacheEntries is the verdict cache's capacity: 131,072 creatives,
// about 4 MB.
const markupCacheEntries = 1 << 17

// markupVerdict is what the readers found in one adm.
type markupVerdict struct {
	finding  markup.Finding
	insecure bool
}

var (
	markupHasher = verdictcache.NewHasher()
	markupCache  = func() *verdictcache.Cache[markupVerdict] {
		c, err := verdictcache.New[markupVerdict](markupCacheEntries)
		if err != nil {
			panic(err) // unreachable: the capacity is a valid constant
		}
		return c
	}()
)

// readMarkup returns what the readers find in adm under reading r (0: the
// readings markup.Sniff finds) and limits lim, from the cache when this
// creative was read before.
func readMarkup(adm []byte, r markup.Reading, lim markup.Limits) markupVerdict {
	k := markupHasher.Sum(markupCacheVersion(r, lim), adm)
	if v, ok := markupCache.Get(k); ok {
		return v
	}
	if r == 0 {
		r = markup.Sniff(adm)
	}
	f, insecure := markup.Read(adm, r, lim)
	v := markupVerdict{finding: f, insecure: insecure}
	markupCache.Put(k, v)
	return v
}

// markupCacheVersion packs what besides the bytes a verdict depends on:
// the reading (8 bits), MaxDepth (at most 64: 8 bits), MaxDecodedBytes (at
// most markup.MaxDecodedBytesLimit: under 2^48).
func markupCacheVersion(r markup.Reading, lim markup.Limits) uint64 {
	return uint64(r) | uint64(lim.MaxDepth)<<8 | uint64(lim.MaxDecodedBytes)<<16
}

// MarkupCacheStats reads the verdict cache's counters (for metrics).
func MarkupCacheStats() verdictcache.Stats { return markupCache.Stats() }
