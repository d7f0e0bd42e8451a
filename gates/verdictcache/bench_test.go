package verdictcache

import (
	"container/list"
	"math/rand/v2"
	"strconv"
	"testing"
)

// creative is a script-heavy ad of n bytes.
func creative(n int) []byte {
	const unit = `<div class="ad"><a href="%%CLICK_URL_UNESC%%https://click.dsp.example/c?id=1">` +
		`<img src="https://cdn.brand.example/a.jpg" width="300" height="250"></a>` +
		`<script>(function(){var t=document.createElement("img");t.src="https://px.dsp.example/i?r="+Math.random();})();</script></div>`
	b := make([]byte, 0, n+len(unit))
	for len(b) < n {
		b = append(b, unit...)
	}
	return b[:n]
}

// BenchmarkHit is a cache hit as a markup gate sees it: digest the creative,
// then look the key up.
func BenchmarkHit(b *testing.B) {
	for _, size := range []int{2 << 10, 20 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KB", func(b *testing.B) {
			h := NewHasher()
			c, _ := New[verdict](1 << 16)
			adm := creative(size)
			c.Put(h.Sum(1, adm), verdict{Reason: 1})
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := c.Get(h.Sum(1, adm)); !ok {
					b.Fatal("miss")
				}
			}
		})
	}
}

// BenchmarkLookup is the cache alone: a hit on a known key.
func BenchmarkLookup(b *testing.B) {
	h := NewHasher()
	c, _ := New[verdict](1 << 16)
	k := h.Sum(1, creative(100))
	c.Put(k, verdict{Reason: 1})
	b.ReportAllocs()
	for b.Loop() {
		c.Get(k)
	}
}

// BenchmarkHitParallel is BenchmarkLookup on every core.
func BenchmarkLookupParallel(b *testing.B) {
	h := NewHasher()
	c, _ := New[verdict](1 << 16)
	keys := make([]Key, 1024)
	for i := range keys {
		keys[i] = h.Sum(1, []byte(strconv.Itoa(i)))
		c.Put(keys[i], verdict{})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Get(keys[i&1023])
			i++
		}
	})
}

// BenchmarkStream feeds a cache creatives of 4 KB as a markup gate would:
// digest, Get, and Put the verdict after a miss. "distinct" never repeats a
// creative; "zipf" draws from 3,000 creatives by Zipf's law (s 1.1), the
// cache holding a third of them or all. hit% is the cache's hit rate,
// lru-hit% that of an exact LRU of the same size on the same draws,
// ideal-hit% that of an unbounded cache. Run with a fixed count
// (-benchtime=1000000x) for comparable rates.
func BenchmarkStream(b *testing.B) {
	const size, creatives = 4 << 10, 3000
	base := creative(size)
	b.Run("distinct", func(b *testing.B) {
		h := NewHasher()
		c, _ := New[verdict](1024)
		adm := append([]byte(nil), base...)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			adm[0], adm[1], adm[2], adm[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
			k := h.Sum(1, adm)
			if _, ok := c.Get(k); !ok {
				c.Put(k, verdict{Reason: 1})
			}
		}
		st := c.Stats()
		b.ReportMetric(100*float64(st.Hits)/float64(st.Hits+st.Misses), "hit%")
	})
	ads := make([][]byte, creatives)
	for i := range ads {
		ads[i] = append([]byte(strconv.Itoa(i)), base...)
	}
	for _, entries := range []int{1000, 4000} {
		b.Run("zipf/entries="+strconv.Itoa(entries), func(b *testing.B) {
			h := NewHasher()
			c, _ := New[verdict](entries)
			z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, creatives-1)
			seen := make([]bool, creatives)
			distinct, n := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				i := z.Uint64()
				if !seen[i] {
					seen[i] = true
					distinct++
				}
				n++
				k := h.Sum(1, ads[i])
				if _, ok := c.Get(k); !ok {
					c.Put(k, verdict{Reason: 1})
				}
			}
			st := c.Stats()
			b.ReportMetric(100*float64(st.Hits)/float64(st.Hits+st.Misses), "hit%")
			b.ReportMetric(lruHitRate(entries, creatives, n), "lru-hit%")
			b.ReportMetric(100*float64(n-distinct)/float64(n), "ideal-hit%")
		})
	}
}

// lruHitRate replays the first n draws of BenchmarkStream's Zipf sequence
// through an exact LRU of the given size (outside the timed loop).
func lruHitRate(size, creatives, n int) float64 {
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, uint64(creatives-1))
	order := list.New()
	at := make(map[uint64]*list.Element, size)
	hits := 0
	for range n {
		i := z.Uint64()
		if e, ok := at[i]; ok {
			hits++
			order.MoveToFront(e)
			continue
		}
		if order.Len() == size {
			delete(at, order.Remove(order.Back()).(uint64))
		}
		at[i] = order.PushFront(i)
	}
	return 100 * float64(hits) / float64(n)
}

// fullCache is a cache as large as the markup gates' (1<<17 entries), full
// of keys of version 1, and its hasher.
func fullCache() (*Hasher, *Cache[verdict]) {
	h := NewHasher()
	c, _ := New[verdict](1 << 17)
	for i := range 1 << 18 {
		c.Put(h.Sum(1, []byte(strconv.Itoa(i))), verdict{})
	}
	return h, c
}

// BenchmarkMiss is a Get of a key the cache does not hold, the cache full
// and as large as the markup gates' (1<<17 entries): the lookup of a
// distinct creative, whose cost is mostly memory reads.
func BenchmarkMiss(b *testing.B) {
	h, c := fullCache()
	misses := make([]Key, 1<<16)
	for i := range misses {
		misses[i] = h.Sum(2, []byte(strconv.Itoa(i)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := c.Get(misses[i&(1<<16-1)]); ok {
			b.Fatal("hit")
		}
		i++
	}
}

// BenchmarkMissPut is what the markup gates do with a distinct creative:
// a Get that misses, then a Put of its verdict (evicting, the cache full),
// on a cache of their size.
func BenchmarkMissPut(b *testing.B) {
	h, c := fullCache()
	keys := make([]Key, 1<<20)
	for i := range keys {
		keys[i] = h.Sum(2, []byte(strconv.Itoa(i)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i&(1<<20-1)]
		if _, ok := c.Get(k); !ok {
			c.Put(k, verdict{Reason: 1})
		}
		i++
	}
}

// BenchmarkSum is the digest alone, on creatives of the sizes the load
// harness's bidder writes (300-500 bytes) and larger.
func BenchmarkSum(b *testing.B) {
	for _, size := range []int{300, 2 << 10, 20 << 10} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			h := NewHasher()
			adm := creative(size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				h.Sum(1, adm)
			}
		})
	}
}
