package verdictcache

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// verdict is the kind of value the markup gates store.
type verdict struct {
	Reason uint16
	Loss   uint16
	NBR    uint16
}

func newCache(t testing.TB, entries int) *Cache[verdict] {
	t.Helper()
	c, err := New[verdict](entries)
	require.NoError(t, err)
	return c
}

func TestGetPut(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 1000)
	k := h.Sum(1, []byte(`<a href="https://click.example/">ad</a>`))
	_, ok := c.Get(k)
	require.False(t, ok)
	c.Put(k, verdict{Reason: 3, Loss: 200, NBR: 354})
	v, ok := c.Get(k)
	require.True(t, ok)
	require.Equal(t, verdict{Reason: 3, Loss: 200, NBR: 354}, v)
	c.Put(k, verdict{Reason: 4})
	v, ok = c.Get(k)
	require.True(t, ok)
	require.Equal(t, verdict{Reason: 4}, v)
	require.Equal(t, Stats{Entries: 1, Capacity: c.Capacity(), Hits: 2, Misses: 1}, c.Stats())
}

func TestNew(t *testing.T) {
	f := func(entries, capacity int) {
		t.Helper()
		c := newCache(t, entries)
		require.Equal(t, capacity, c.Capacity(), entries)
		require.Positive(t, c.Bytes())
	}
	f(1, 8)
	f(8, 8)
	f(9, 16)
	f(512, 512)
	f(3000, 3072) // 375 buckets: 64 shards of 6
	f(1<<16, 1<<16)
	for _, n := range []int{0, -1, MaxEntries + 1} {
		_, err := New[verdict](n)
		require.EqualError(t, err, "verdict cache entries must be 1-268435456, got "+strconv.Itoa(n))
	}
}

// TestCapacityBound fills a cache with ten times its capacity: it holds
// exactly Capacity entries, every insert beyond them evicted one, and the
// memory did not move.
func TestCapacityBound(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 1000)
	bytes := c.Bytes()
	var b [8]byte
	n := 10 * c.Capacity()
	for i := range n {
		b[0], b[1], b[2] = byte(i), byte(i>>8), byte(i>>16)
		c.Put(h.Sum(1, b[:]), verdict{Reason: uint16(i)})
		require.LessOrEqual(t, c.Stats().Entries, c.Capacity())
	}
	st := c.Stats()
	require.Equal(t, c.Capacity(), st.Entries)
	require.Equal(t, uint64(n-c.Capacity()), st.Evictions)
	require.Equal(t, bytes, c.Bytes())
	// The latest key of all is still there.
	v, ok := c.Get(h.Sum(1, b[:]))
	require.True(t, ok)
	require.Equal(t, uint16(n-1), v.Reason)
}

// TestClockEviction uses one bucket: entries read since the hand last passed
// survive, unread ones are evicted in hand order.
func TestClockEviction(t *testing.T) {
	h := NewHasher()
	c := newCache(t, ways)
	require.Equal(t, ways, c.Capacity())
	keys := make([]Key, 2*ways)
	for i := range keys {
		keys[i] = h.Sum(7, []byte{byte(i)})
	}
	for i := range ways {
		c.Put(keys[i], verdict{Reason: uint16(i)})
	}
	for i := range ways / 2 {
		_, ok := c.Get(keys[i])
		require.True(t, ok)
	}
	for i := ways; i < ways+ways/2; i++ {
		c.Put(keys[i], verdict{Reason: uint16(i)})
	}
	for i := range ways + ways/2 {
		_, ok := c.Get(keys[i])
		require.Equal(t, i < ways/2 || i >= ways, ok, "key %d", i)
	}
	require.Equal(t, uint64(ways/2), c.Stats().Evictions)
	// Every entry is now marked but the four unread ones: the next insert
	// clears the marks it passes and takes the first unmarked way.
	c.Put(keys[ways+ways/2], verdict{})
	require.Equal(t, ways, c.Stats().Entries)
	require.Equal(t, uint64(ways/2+1), c.Stats().Evictions)
}

// TestVersionsNeverShare: the same bytes under two versions are two keys,
// each with its own value, whatever was stored first.
func TestVersionsNeverShare(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 64)
	adm := []byte(`<script>top.location="https://x.example/"</script>`)
	k1, k2 := h.Sum(1, adm), h.Sum(2, adm)
	require.NotEqual(t, k1, k2)
	require.Equal(t, k1.Lo, k2.Lo)
	c.Put(k1, verdict{Reason: 1})
	_, ok := c.Get(k2)
	require.False(t, ok)
	c.Put(k2, verdict{Reason: 2})
	v1, ok1 := c.Get(k1)
	v2, ok2 := c.Get(k2)
	require.True(t, ok1 && ok2)
	require.Equal(t, uint16(1), v1.Reason)
	require.Equal(t, uint16(2), v2.Reason)
}

// TestDistinctInputsDistinctKeys: random inputs of every short length, one
// 20 KB creative with each single bit flipped in its first and last 2 KB,
// and prefixes of one input never share a digest; the same input always
// gives the same key; two Hashers give different keys.
func TestDistinctInputsDistinctKeys(t *testing.T) {
	h := NewHasher()
	seen := make(map[[2]uint64]string, 1<<18)
	// add records b's digest under id, which names b: equal ids for equal
	// inputs, distinct ids for distinct ones.
	add := func(b []byte, id string) {
		k := h.Sum(0, b)
		d := [2]uint64{k.Lo, k.Hi}
		if prev, ok := seen[d]; ok && prev != id {
			t.Fatalf("%q and %q share a digest", prev, id)
		}
		seen[d] = id
		if h.Sum(0, b) != k {
			t.Fatalf("%q: two digests", id)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 20<<10)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for range 100_000 {
		b := buf[:r.IntN(300)]
		add(b, string(b))
		for j := range 300 {
			buf[j] = byte(r.Uint32())
		}
	}
	for n := range 1024 {
		z := make([]byte, n) // the empty input included
		add(z, string(z))
	}
	for _, i := range []int{0, len(buf) - 2048} {
		for bit := range 2048 * 8 {
			buf[i+bit/8] ^= 1 << (bit % 8)
			add(buf, "flip "+strconv.Itoa(8*i+bit))
			buf[i+bit/8] ^= 1 << (bit % 8)
		}
	}
	require.Greater(t, len(seen), 130_000)
	other := NewHasher()
	require.NotEqual(t, h.Sum(0, buf), other.Sum(0, buf))
}

// TestDigestsAreNotLinear: GHASH is linear over GF(2), so bare GMAC tags of
// equal-length inputs satisfy T(a)^T(b)^T(c) == T(a^b^c), and creatives
// that differ in a few bytes would crowd into a few buckets. The final AES
// breaks that.
func TestDigestsAreNotLinear(t *testing.T) {
	h := NewHasher()
	r := rand.New(rand.NewPCG(3, 4))
	a, b, c, d := make([]byte, 40), make([]byte, 40), make([]byte, 40), make([]byte, 40)
	for range 100 {
		for i := range a {
			a[i], b[i], c[i] = byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())
			d[i] = a[i] ^ b[i] ^ c[i]
		}
		ka, kb, kc, kd := h.Sum(0, a), h.Sum(0, b), h.Sum(0, c), h.Sum(0, d)
		require.False(t, ka.Lo^kb.Lo^kc.Lo == kd.Lo && ka.Hi^kb.Hi^kc.Hi == kd.Hi)
	}
}

// TestStructuredInputsSpread: creatives that differ only in a counter fill
// three quarters of a cache with (almost) no eviction: each key has two
// buckets to choose from.
func TestStructuredInputsSpread(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 1<<16)
	adm := []byte(`<img src="https://px.dsp.example/i?cb=0000000000">`)
	n := 3 * c.Capacity() / 4
	for i := range n {
		copy(adm[len(adm)-12:], strconv.Itoa(1e9+i))
		c.Put(h.Sum(0, adm), verdict{})
	}
	// A handful here; with one bucket per key, about 2,500.
	require.Less(t, c.Stats().Evictions, uint64(n/1000))
}

// TestConcurrent runs readers and writers over a skewed key set while the
// counters are read: every hit returns the value written for its key, the
// entries never exceed the capacity, and the counters add up.
func TestConcurrent(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 256)
	const keys, workers, ops = 2000, 8, 5000
	ks := make([]Key, keys)
	for i := range ks {
		ks[i] = h.Sum(uint64(i%3), []byte{byte(i), byte(i >> 8)})
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			z := rand.NewZipf(r, 1.1, 1, keys-1)
			for range ops {
				i := int(z.Uint64())
				if v, ok := c.Get(ks[i]); ok {
					if v.Reason != uint16(i) {
						t.Errorf("key %d read value %d", i, v.Reason)
						return
					}
					continue
				}
				c.Put(ks[i], verdict{Reason: uint16(i)})
			}
		})
	}
	done := make(chan struct{})
	var bounded sync.WaitGroup
	bounded.Go(func() {
		for {
			if st := c.Stats(); st.Entries > st.Capacity {
				t.Errorf("%d entries in a cache of %d", st.Entries, st.Capacity)
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
	wg.Wait()
	close(done)
	bounded.Wait()
	st := c.Stats()
	require.Equal(t, uint64(workers*ops), st.Hits+st.Misses)
	require.LessOrEqual(t, st.Entries, c.Capacity())
	require.Positive(t, st.Hits)
	require.Positive(t, st.Evictions)
}

// Every stored entry is found, whichever of its key's two buckets holds it
// (a new entry goes to the emptier one, so about half sit in the second).
func TestEntriesInEitherBucketAreFound(t *testing.T) {
	h := NewHasher()
	c := newCache(t, 1024)
	keys := make([]Key, 700)
	for i := range keys {
		keys[i] = h.Sum(1, []byte(fmt.Sprintf("creative-%d", i)))
		c.Put(keys[i], verdict{Reason: uint16(i)})
	}
	found := 0
	for _, k := range keys {
		if _, ok := c.Get(k); ok {
			found++
		}
	}
	st := c.Stats()
	require.Equal(t, st.Entries, found, "every entry the cache holds is found")
	require.Greater(t, found, 600)
}
