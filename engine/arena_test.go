package engine

import (
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestPointerFree(t *testing.T) {
	require.True(t, pointerFree(reflect.TypeFor[int64]()))
	require.True(t, pointerFree(reflect.TypeFor[struct {
		A int8
		B [3]float64
	}]()))
	require.False(t, pointerFree(reflect.TypeFor[string]()))
	require.False(t, pointerFree(reflect.TypeFor[[]int]()))
	require.False(t, pointerFree(reflect.TypeFor[*int]()))
	require.False(t, pointerFree(reflect.TypeFor[struct {
		A int
		B [2]*int
	}]()))
	require.False(t, pointerFree(reflect.TypeFor[openrtb2.Format]()), "Format holds an ext")
}

// TestArenaResetZeroes: values handed out after a reset are zero, whether
// their slab is cleared as bytes (pointer-free) or through reflect.
func TestArenaResetZeroes(t *testing.T) {
	ints := planFor(reflect.TypeFor[[]int64]()).elem
	strs := planFor(reflect.TypeFor[[]string]()).elem
	require.True(t, ints.pointerFree)
	require.False(t, strs.pointerFree)
	var a arena
	for round := range 3 {
		is := unsafe.Slice((*int64)(a.alloc(ints, 5)), 5)
		ss := unsafe.Slice((*string)(a.alloc(strs, 5)), 5)
		for i := range 5 {
			require.Zero(t, is[i], "round %d", round)
			require.Zero(t, ss[i], "round %d", round)
			is[i], ss[i] = int64(i+1), "x"
		}
		a.reset()
		require.Zero(t, a.slabs[strs.slab].used)
	}
	// Only what was handed out is cleared: a value past it, written
	// through the chunk, is left (the contract is zeroed values handed out).
	s := &a.slabs[strs.slab]
	unsafe.Slice((*string)(s.base), s.n)[s.n-1] = "kept"
	unsafe.Slice((*string)(a.alloc(strs, 2)), 2)[1] = "y"
	a.reset()
	got := unsafe.Slice((*string)(s.base), s.n)
	require.Equal(t, []string{"", ""}, got[:2])
	require.Equal(t, "kept", got[s.n-1])
}

// TestArenaResetDropsPointers: after a reset no value handed out before it
// holds a pointer, in memory or for the garbage collector: the values of a
// pointerful slab read back zero (their pointers nil), and what they alone
// pointed to is collected while the arena and its chunk live on.
func TestArenaResetDropsPointers(t *testing.T) {
	formats := planFor(reflect.TypeFor[[]openrtb2.Format]()).elem
	require.False(t, formats.pointerFree)
	var a arena
	collected := make(chan struct{}, 4)
	fill := func(n int) {
		fs := unsafe.Slice((*openrtb2.Format)(a.alloc(formats, n)), n)
		for i := range fs {
			ext := make([]byte, 64)
			runtime.AddCleanup(&ext[0], func(struct{}) { collected <- struct{}{} }, struct{}{})
			fs[i] = openrtb2.Format{W: int64(i + 1), Ext: ext}
		}
	}
	fill(3)
	s := &a.slabs[formats.slab]
	base := s.base
	a.reset()
	require.Equal(t, base, s.base, "the chunk kept")
	require.Equal(t, make([]openrtb2.Format, 3), unsafe.Slice((*openrtb2.Format)(s.base), 3))
	for n, gcs := 0, 0; n < 3; gcs++ {
		require.Less(t, gcs, 100, "a value the slab pointed to is still reachable")
		runtime.GC()
		select {
		case <-collected:
			n++
		case <-time.After(100 * time.Millisecond): // no assertion on time: GC again
		}
	}
	runtime.KeepAlive(&a)
	// Reused: the values handed out again are zero.
	fs := unsafe.Slice((*openrtb2.Format)(a.alloc(formats, 3)), 3)
	require.Equal(t, base, unsafe.Pointer(&fs[0]))
	require.Equal(t, make([]openrtb2.Format, 3), fs)
}

// TestGrowthNext: next gives the capacities reflect's Value.Grow(1) gives a
// slice grown one element at a time, as encoding/json grows it, for short
// slices (compared one by one) and long ones (searched, then computed).
func TestGrowthNext(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[int64](), reflect.TypeFor[openrtb2.Bid](), reflect.TypeFor[string]()} {
		g := newGrowth(typ)
		v := reflect.New(reflect.SliceOf(typ)).Elem()
		for v.Cap() < 100_000 {
			c := v.Cap()
			v.Grow(1)
			require.Equal(t, v.Cap(), g.next(c), "[]%s of capacity %d", typ, c)
			v.SetLen(v.Cap())
		}
		// A capacity that is no step is an error of the decoder's, small
		// or not.
		for _, c := range []int{3, 3 * smallCaps} {
			if !slices.Contains(*g.known.Load(), c) {
				require.Panics(t, func() { g.next(c) }, "[]%s of capacity %d", typ, c)
			}
		}
	}
}
