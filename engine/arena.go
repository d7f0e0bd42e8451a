package engine

import (
	"reflect"
	"unsafe"
)

// arena is the storage behind one decoded message: a slab per type the
// decoder allocates (structs behind pointers, slice elements) and a text
// buffer for strings that needed unescaping. It belongs to a pooled Eval:
// reset zeroes what the last message used and keeps the memory, so decoding
// a message no larger than an earlier one allocates nothing.
//
// Values handed out live until the next reset. An arena is not safe for
// concurrent use.
type arena struct {
	slabs []slab
	dirty []int // the slabs handed out from since the last reset
	text  []byte
}

// Bounds on what an arena keeps across resets, so that one huge message does
// not pin its memory in the pool.
const (
	maxKeptSlabBytes = 256 << 10
	maxKeptText      = 256 << 10
	minSlabElems     = 8
	minText          = 4 << 10
)

// slab is typed storage for values of one type: one chunk, handed out from
// the front. Typed (allocated by reflect as []T) so that the garbage
// collector sees the pointers inside; base, a pointer to the chunk's first
// value, keeps the chunk alive. size and pointers are the plan's, kept here
// so that reset reads the slabs alone.
type slab struct {
	base     unsafe.Pointer
	n        int
	used     int
	size     uintptr
	pointers bool // the values hold pointers (!plan.pointerFree)
	listed   bool // in arena.dirty
}

func (a *arena) slab(p *plan) *slab {
	if a.slabs == nil {
		a.slabs = make([]slab, len(slabPlans))
	}
	return &a.slabs[p.slab]
}

// alloc returns n zeroed contiguous values of p's type (for n == 0, a
// pointer that must not be dereferenced, as an empty slice's).
func (a *arena) alloc(p *plan, n int) unsafe.Pointer {
	if n == 0 {
		return unsafe.Pointer(&zeroLength)
	}
	s := a.slab(p)
	if s.used+n > s.n {
		s.newChunk(p, max(2*s.n, s.used+n, minSlabElems))
	}
	if !s.listed {
		s.listed = true
		a.dirty = append(a.dirty, p.slab)
	}
	ptr := unsafe.Add(s.base, uintptr(s.used)*p.size)
	s.used += n
	return ptr
}

// grow returns a region of newCap values of p's type whose first oldCap
// values are those at data, as growing a slice does: in place when data is
// the last region handed out and the chunk has room, else a new region with
// the values copied.
func (a *arena) grow(p *plan, data unsafe.Pointer, oldCap, newCap int) unsafe.Pointer {
	s := a.slab(p)
	// Compared as addresses: the end of a region may be the end of the chunk,
	// where no pointer may point.
	if data != nil && s.n > 0 && uintptr(data)+uintptr(oldCap)*p.size == uintptr(s.base)+uintptr(s.used)*p.size &&
		s.used+newCap-oldCap <= s.n {
		s.used += newCap - oldCap
		return data
	}
	ptr := a.alloc(p, newCap)
	for i := 0; i < oldCap; i++ {
		off := uintptr(i) * p.size
		reflect.NewAt(p.typ, unsafe.Add(ptr, off)).Elem().Set(reflect.NewAt(p.typ, unsafe.Add(data, off)).Elem())
	}
	return ptr
}

// newChunk replaces the slab's chunk by a bigger one. Values handed out from
// the old chunk stay valid: what points to them keeps it alive.
func (s *slab) newChunk(p *plan, n int) {
	s.base, s.n, s.used = reflect.MakeSlice(reflect.SliceOf(p.typ), n, n).UnsafePointer(), n, 0 // listed stays
	s.size, s.pointers = p.size, !p.pointerFree
}

// reserve returns an empty buffer with room for n bytes of text; commit
// keeps the first k of them.
func (a *arena) reserve(n int) []byte {
	if len(a.text)+n > cap(a.text) {
		a.text = make([]byte, 0, max(2*cap(a.text), n, minText))
	}
	return a.text[len(a.text) : len(a.text) : len(a.text)+n]
}

func (a *arena) commit(k int) []byte {
	t := a.text[len(a.text) : len(a.text)+k : len(a.text)+k]
	a.text = a.text[:len(a.text)+k]
	return t
}

// reset zeroes what the last message used so that the next one starts from
// zeroed memory, and drops chunks too large to keep. Pointer-free values are
// cleared as bytes; the others as pointer-sized words (clearPointerful), so
// that no pointer of the last message survives in the pool.
func (a *arena) reset() {
	for _, i := range a.dirty {
		s := &a.slabs[i]
		switch {
		case uintptr(s.n)*s.size > maxKeptSlabBytes:
			*s = slab{}
			continue
		case s.pointers:
			clearPointerful(s.base, uintptr(s.used)*s.size)
		default:
			// Viewed through an array pointer, not unsafe.Slice: a
			// kept chunk is at most maxKeptSlabBytes, and a slice of
			// an array costs one bounds check, unsafe.Slice four.
			n := uintptr(s.used) * s.size
			clear((*[maxKeptSlabBytes]byte)(s.base)[:n:n])
		}
		s.used, s.listed = 0, false
	}
	a.dirty = a.dirty[:0]
	if cap(a.text) > maxKeptText {
		a.text = nil
	}
	a.text = a.text[:0]
}

// clearPointerful zeroes n bytes at p, a region of a heap chunk holding
// values with pointers, n a multiple of the pointer size (a type with a
// pointer is pointer-aligned, so its size is). Cleared as a slice of
// pointers it is cleared as clear on a []T of those values is: clear on a
// slice whose elements hold pointers compiles to one runtime call over its
// bytes (memclrHasPointers), whose write barrier reads which words are
// pointers from the heap's own record of the chunk, not from T. So it costs
// what a typed clear costs, without reflect (reflect.Value.Clear) or a clear
// function per type.
//
// p's chunk is a kept one, at most maxKeptSlabBytes (reset drops larger
// chunks without clearing them): it is viewed through an array pointer of
// that size, whose slicing costs one bounds check (unsafe.Slice, four).
func clearPointerful(p unsafe.Pointer, n uintptr) {
	words := n / unsafe.Sizeof(p)
	clear((*[maxKeptSlabBytes / unsafe.Sizeof(p)]unsafe.Pointer)(p)[:words:words])
}
