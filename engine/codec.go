package engine

// The type plans behind the decoder (unmarshal.go) and the encoder
// (encode.go): for each Go type of the openrtb2 model, compiled once from
// reflect, what encoding/json would do with it: the fields by JSON name in
// encoding/json's order (embedded structs flattened, shallower names
// dominating deeper ones), their offsets and kinds, omitempty. Plans are
// built at package initialisation and immutable afterwards.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bidguard/bidguard/jsonraw"
)

// kind is what a plan decodes and encodes.
type kind uint8

const (
	kindString kind = iota
	kindInt         // a signed integer of plan.bits bits (named types included)
	kindFloat       // float64
	kindRaw         // json.RawMessage
	kindPtr
	kindSlice
	kindStruct
	// kindPresentFloat is a *float64 decoded in place: into a float64
	// (null stores 0), the decoder recording whether the pointer would be
	// set (decoder.present). Only the bid's price has it (bidInPlacePlan).
	kindPresentFloat
)

// plan is how one Go type is read and written.
type plan struct {
	typ  reflect.Type
	kind kind
	size uintptr
	bits uint8 // kindInt
	// elem is the pointed-to or element type (kindPtr, kindSlice).
	elem *plan
	// fields and keys: kindStruct.
	fields []field
	keys   *jsonraw.Keys
	// written: the fields (by index, the first 64) encoding/json always
	// writes, those without omitempty.
	written uint64
	// slab is the arena slab that stores values of this type when they are
	// pointed to or are slice elements; -1 when none does.
	slab int
	// pointerFree: values of this type hold no pointer, so their memory
	// may be cleared as bytes (arena.reset).
	pointerFree bool
	// growth is encoding/json's capacity sequence for slices of this type.
	growth *growth
}

// field is one JSON member of a struct.
type field struct {
	name      string
	key       string // `"name":`, as the encoder writes it
	offset    uintptr
	plan      *plan
	omitEmpty bool
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// planner compiles plans and numbers the slabs. Only package initialisation
// uses it.
type planner struct {
	plans    map[reflect.Type]*plan
	building map[reflect.Type]bool
	slabs    []*plan
}

// slabPlans lists, by slab index, the types an arena stores.
var slabPlans []*plan

var thePlanner = &planner{plans: map[reflect.Type]*plan{}, building: map[reflect.Type]bool{}}

// planFor compiles t. It panics on a type the model does not use (maps,
// interfaces, unsigned integers, byte slices but json.RawMessage, recursive
// types): the plans are built from the openrtb2 types at initialisation, so
// such a change of the model fails every test at once.
func planFor(t reflect.Type) *plan {
	p := thePlanner.plan(t)
	slabPlans = thePlanner.slabs
	return p
}

func (pl *planner) plan(t reflect.Type) *plan {
	if p := pl.plans[t]; p != nil {
		return p
	}
	if pl.building[t] {
		panic(fmt.Sprintf("engine: recursive type %s", t))
	}
	pl.building[t] = true
	defer delete(pl.building, t)
	p := &plan{typ: t, size: t.Size(), slab: -1, pointerFree: pointerFree(t)}
	switch {
	case t == rawMessageType:
		p.kind = kindRaw
	case t.Kind() == reflect.String:
		p.kind = kindString
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		p.kind, p.bits = kindInt, uint8(t.Bits())
	case t.Kind() == reflect.Float64:
		p.kind = kindFloat
	case t.Kind() == reflect.Pointer:
		p.kind, p.elem = kindPtr, pl.stored(t.Elem())
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		p.kind, p.elem = kindSlice, pl.stored(t.Elem())
		p.elem.growthFor()
	case t.Kind() == reflect.Struct:
		p.kind = kindStruct
		p.fields = pl.structFields(t)
		names := make([]string, len(p.fields))
		for i, f := range p.fields {
			names[i] = f.name
			if !f.omitEmpty {
				p.written |= 1 << (i & 63) // a struct of over 64 fields is never verbatim
			}
		}
		p.keys = jsonraw.NewKeys(names...)
	default:
		panic(fmt.Sprintf("engine: no JSON plan for type %s", t))
	}
	pl.plans[t] = p
	return p
}

// pointerFree reports whether values of t hold no pointer the garbage
// collector must see.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// stored returns the plan of t and gives it a slab.
func (pl *planner) stored(t reflect.Type) *plan {
	p := pl.plan(t)
	if p.slab < 0 {
		p.slab = len(pl.slabs)
		pl.slabs = append(pl.slabs, p)
	}
	return p
}

func (p *plan) growthFor() {
	if p.growth == nil {
		p.growth = newGrowth(p.typ)
	}
}

// candidate is a field found while flattening embedded structs.
type candidate struct {
	field
	index  []int
	depth  int
	tagged bool
}

// structFields lists t's JSON fields as encoding/json does: exported fields
// with their tag names, embedded structs without a tag flattened, of several
// fields with one name the shallowest (and, at equal depth, the only tagged
// one) kept, in the order of their index sequences.
func (pl *planner) structFields(t reflect.Type) []field {
	var all []candidate
	var walk func(t reflect.Type, base uintptr, index []int, depth int)
	walk = func(t reflect.Type, base uintptr, index []int, depth int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if sf.Anonymous && name == "" {
				if sf.Type.Kind() != reflect.Struct {
					panic(fmt.Sprintf("engine: embedded non-struct %s in %s", sf.Type, t))
				}
				walk(sf.Type, base+sf.Offset, idx, depth+1)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if strings.Contains(","+opts+",", ",string,") {
				panic(fmt.Sprintf("engine: ,string option on %s.%s", t, sf.Name))
			}
			tagged := name != ""
			if !tagged {
				name = sf.Name
			}
			all = append(all, candidate{
				field:  field{name: name, offset: base + sf.Offset, omitEmpty: strings.Contains(","+opts+",", ",omitempty,")},
				index:  idx,
				depth:  depth,
				tagged: tagged,
			})
		}
	}
	walk(t, 0, nil, 0)
	byName := map[string][]candidate{}
	for _, c := range all {
		byName[c.name] = append(byName[c.name], c)
	}
	var kept []candidate
	for _, cs := range byName {
		minDepth := cs[0].depth
		for _, c := range cs {
			minDepth = min(minDepth, c.depth)
		}
		var top []candidate
		for _, c := range cs {
			if c.depth == minDepth {
				top = append(top, c)
			}
		}
		if len(top) > 1 {
			var tagged []candidate
			for _, c := range top {
				if c.tagged {
					tagged = append(tagged, c)
				}
			}
			if len(tagged) != 1 {
				continue // ambiguous: encoding/json drops the name
			}
			top = tagged
		}
		kept = append(kept, top[0])
	}
	slices.SortFunc(kept, func(a, b candidate) int { return slices.Compare(a.index, b.index) })
	fields := make([]field, len(kept))
	for i, c := range kept {
		f := c.field
		f.key = string(jsonraw.AppendString(nil, f.name)) + ":"
		f.plan = pl.plan(typeByIndex(t, c.index))
		fields[i] = f
	}
	return fields
}

func typeByIndex(t reflect.Type, index []int) reflect.Type {
	for _, i := range index {
		t = t.Field(i).Type
	}
	return t
}

// fieldIndex returns the index of the field named name; it panics when there
// is none (plans are checked at initialisation).
func (p *plan) fieldIndex(name string) int {
	for i, f := range p.fields {
		if f.name == name {
			return i
		}
	}
	panic(fmt.Sprintf("engine: %s has no JSON field %q", p.typ, name))
}

// growth is the sequence of capacities encoding/json's decoder gives a slice
// of one element type as it grows it one element at a time (reflect's
// Value.Grow(1): the runtime's growth formula rounded up to its size
// classes). The decoder reproduces these capacities so that a slice decoded
// twice in one document (a duplicate key) keeps exactly the stale elements
// encoding/json keeps. The sequence is extended on demand and memoised; its
// steps are found by letting the runtime round a real allocation, once per
// step per process.
type growth struct {
	typ reflect.Type
	// first is the capacity of the first step (from 0), set once.
	first int
	// small is next's answer for a capacity below len(small) that is a
	// step (0 for the others), set once from the first steps: the usual
	// slice's next capacity in one load.
	small []int
	mu    sync.Mutex
	caps  []int // caps[k] is the capacity after k+1 growth steps from 0
	// known is caps published for lock-free reads.
	known atomic.Pointer[[]int]
}

func newGrowth(t reflect.Type) *growth {
	g := &growth{typ: t}
	g.mu.Lock()
	g.extendLocked(64)
	g.first = g.caps[0]
	g.small = make([]int, smallCaps)
	g.small[0] = g.caps[0]
	for k := 0; k+1 < len(g.caps) && g.caps[k] < smallCaps; k++ {
		g.small[g.caps[k]] = g.caps[k+1]
	}
	g.mu.Unlock()
	return g
}

// smallCaps bounds the capacities growth.small answers for.
const smallCaps = 64

// shortSteps is how many of the first capacities next compares one by one
// before it searches.
const shortSteps = 8

// next returns the capacity after growing a full slice of capacity c by one
// element.
func (g *growth) next(c int) int {
	if uint(c) < uint(len(g.small)) {
		if n := g.small[c]; n != 0 {
			return n
		}
	}
	caps := *g.known.Load() // never empty: newGrowth computed the first steps
	if c == 0 {
		return caps[0]
	}
	// Most slices are short: their capacity is one of the first steps.
	for k := 0; k < min(len(caps)-1, shortSteps) && caps[k] <= c; k++ {
		if caps[k] == c {
			return caps[k+1]
		}
	}
	if c < caps[len(caps)-1] {
		if k, found := slices.BinarySearch(caps, c); found {
			return caps[k+1]
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.extendLocked(c + 1)
	caps = g.caps
	k, found := slices.BinarySearch(caps, c)
	if !found {
		panic(fmt.Sprintf("engine: capacity %d is not one encoding/json gives []%s", c, g.typ))
	}
	return caps[k+1]
}

// extendLocked computes steps until the last capacity exceeds atLeast.
func (g *growth) extendLocked(atLeast int) {
	for len(g.caps) == 0 || g.caps[len(g.caps)-1] <= atLeast {
		old := 0
		if n := len(g.caps); n > 0 {
			old = g.caps[n-1]
		}
		g.caps = append(g.caps, roundedCap(g.typ, nextSliceCap(old+1, old)))
	}
	caps := slices.Clone(g.caps)
	g.known.Store(&caps)
}

// nextSliceCap is the runtime's growth formula (runtime.nextslicecap):
// double below 256 elements, then about 1.25x.
func nextSliceCap(newLen, oldCap int) int {
	newCap := oldCap
	if double := newCap + newCap; newLen > double {
		return newLen
	} else if oldCap < 256 {
		return double
	}
	for newCap < newLen {
		newCap += (newCap + 3*256) >> 2
	}
	return newCap
}

// roundedCap is the capacity the runtime gives a slice of n elements of t
// grown from empty: n rounded up to its allocation size class.
func roundedCap(t reflect.Type, n int) int {
	v := reflect.New(reflect.SliceOf(t)).Elem()
	v.Grow(n)
	return v.Cap()
}

// unsafe helpers shared by the decoder and the encoder.

// sliceHeader is the layout of a Go slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func at(p unsafe.Pointer, off uintptr) unsafe.Pointer { return unsafe.Add(p, off) }
