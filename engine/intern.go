package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"sync/atomic"
)

// Interning: a compiled configuration holds each gate instance once.
//
// A gate instance is identified by a SHA-256 over its factory name, what its
// constructor sees of its Env (InSeat, Dir) and the canonical encoding of its
// decoded options (canonicalOptions): two entries with equal keys would build
// equal gates, so they share one. Ten thousand seats that each override one
// option of one inherited gate hold the inherited gates once, and the
// overridden one once per distinct value. An entry (result name, mode, gate)
// is shared the same way, and so is a seat's whole gate list when another
// seat has the same one.
//
// Compile keeps its table in the snapshot; CompileFrom looks gates and
// entries up in the previous snapshot's table too, so a reload builds only
// the gates whose options changed. A gate whose constructor read a file
// (Env.Watch) is shared within one compilation only: the file may have
// changed since. A seat whose config was decoded from unchanged bytes
// (config.SeatConfig.Origin) keeps its compiled policy whole, its entries
// carried into the new table, when the default policy it inherits kept its
// entries too (seatContext).

// gateKey identifies a gate instance.
type gateKey [sha256.Size]byte

// entryKey identifies a compiled entry.
type entryKey struct {
	gate gateKey
	name string
	mode Mode
}

// internedGate is one gate instance and the options it was built from.
type internedGate struct {
	gate Gate
	opts any
	// version is what the snapshot's version hashes of it (gateKeyOf).
	version [32]byte
	// watched: the constructor read files; not reused by a later compilation.
	watched bool
}

// internTable holds the gate instances, entries and gate lists of one
// snapshot. It is written only while the snapshot compiles.
type internTable struct {
	gates   map[gateKey]*internedGate
	entries map[entryKey]*GateEntry
	// lists are the seat policies' gate lists, keyed by their entries' ids.
	lists map[string]*gateList
}

// gateList is an interned gate list and what the snapshot's version hashes
// of it: the sum of its entries' sums, taken once however many seats
// share it.
type gateList struct {
	gates []*GateEntry
	sum   [sha256.Size]byte
}

func newGateList(gates []*GateEntry) *gateList {
	l := &gateList{gates: gates}
	h := sha256.New()
	for _, e := range gates {
		h.Write(e.sum[:])
	}
	h.Sum(l.sum[:0])
	return l
}

// entryIDs numbers the entries of every compilation: an entry may pass
// from a snapshot to the next, and a gate list is keyed by its entries' ids.
var entryIDs atomic.Uint64

// newInternTable returns an empty table sized for as much as prev (nil:
// none) holds: a reload mostly carries the previous table over.
func newInternTable(prev *internTable) *internTable {
	if prev == nil {
		prev = &internTable{}
	}
	return &internTable{gates: make(map[gateKey]*internedGate, len(prev.gates)),
		entries: make(map[entryKey]*GateEntry, len(prev.entries)), lists: make(map[string]*gateList, len(prev.lists))}
}

// gateKeyOf returns the key of the gate factory builds from opts under env,
// and what the snapshot's version hashes of it: the same without the
// directory, so that a config moved elsewhere keeps its version (the files
// a gate reads are hashed with their paths). It uses buf (returned) for the
// encoding. interned is false when the options hold a value the canonical
// encoding does not cover (a func, a channel): that gate is built for its
// entry alone, and its sums hash the options' JSON.
func gateKeyOf(buf []byte, factory string, env Env, opts any) (_ []byte, k gateKey, version [sha256.Size]byte, interned bool) {
	b := appendString(buf[:0], factory)
	if env.InSeat {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b, interned = appendCanonical(b, reflect.ValueOf(opts))
	if !interned {
		j, err := json.Marshal(opts)
		if err != nil {
			j = []byte(err.Error())
		}
		b = append(appendString(b[:0], factory), j...)
	}
	version = sha256.Sum256(b)
	b = appendString(b, env.Dir)
	return b, sha256.Sum256(b), version, interned
}

// entrySum is what the snapshot's version hashes of an entry: its gate's
// version sum, result name and mode.
func entrySum(gate [sha256.Size]byte, name string, mode Mode) [sha256.Size]byte {
	b := make([]byte, 0, len(gate)+len(name)+8)
	b = append(b, gate[:]...)
	b = appendString(b, name)
	b = append(b, byte(mode))
	return sha256.Sum256(b)
}

// listKey keys a gate list by its entries' ids, into buf.
func listKey(buf []byte, gates []*GateEntry) []byte {
	buf = buf[:0]
	for _, e := range gates {
		buf = binary.AppendUvarint(buf, uint64(e.id))
	}
	return buf
}

// appendCanonical appends an encoding of v that two values share exactly when
// they are equal as data: pointers are followed (nil apart), a nil slice or
// map differs from an empty one, map entries are sorted by key, floats are
// encoded by their bits. v's type is fixed by the factory, so the encoding
// need not name it, except under an interface. It reports false for kinds
// that are not data (func, chan, unsafe pointer).
func appendCanonical(b []byte, v reflect.Value) ([]byte, bool) {
	ok := true
	switch v.Kind() {
	case reflect.Invalid:
		b = append(b, 0)
	case reflect.Bool:
		if v.Bool() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b = binary.AppendVarint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b = binary.AppendUvarint(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(real(c)))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(imag(c)))
	case reflect.String:
		b = appendString(b, v.String())
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), true
		}
		return appendCanonical(append(b, 1), v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return append(b, 0), true
		}
		b = appendString(append(b, 1), v.Elem().Type().String())
		return appendCanonical(b, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 0), true
		}
		b = append(b, 1)
		fallthrough
	case reflect.Array:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		for i := range v.Len() {
			if b, ok = appendCanonical(b, v.Index(i)); !ok {
				return b, false
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return append(b, 0), true
		}
		type kv struct{ k, v []byte }
		entries := make([]kv, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			k, kok := appendCanonical(nil, it.Key())
			e, vok := appendCanonical(nil, it.Value())
			if !kok || !vok {
				return b, false
			}
			entries = append(entries, kv{k, e})
		}
		slices.SortFunc(entries, func(x, y kv) int { return bytes.Compare(x.k, y.k) })
		b = binary.AppendUvarint(append(b, 1), uint64(len(entries)))
		for _, e := range entries {
			b = append(append(b, e.k...), e.v...)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if b, ok = appendCanonical(b, v.Field(i)); !ok {
				return b, false
			}
		}
	default:
		return b, false
	}
	return b, true
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// cloneOptions returns a deep copy of v, a decoded options struct (a
// pointer), so that a seat's override can be decoded into a copy of the
// inherited options instead of decoding them again. It reports false when v
// holds a kind that is not data or a field it cannot set.
func cloneOptions(v any) (any, bool) {
	src := reflect.ValueOf(v)
	if !src.IsValid() {
		return nil, false
	}
	dst := reflect.New(src.Type()).Elem()
	if !deepCopy(dst, src) {
		return nil, false
	}
	return dst.Interface(), true
}

// deepCopy sets dst, a settable zero value of src's type, to a copy of src
// that shares no pointer, slice or map with it.
func deepCopy(dst, src reflect.Value) bool {
	if !dst.CanSet() {
		return false
	}
	switch src.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		dst.Set(src)
	case reflect.Pointer:
		if src.IsNil() {
			return true
		}
		p := reflect.New(src.Type().Elem())
		if !deepCopy(p.Elem(), src.Elem()) {
			return false
		}
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return true
		}
		v := reflect.New(src.Elem().Type()).Elem()
		if !deepCopy(v, src.Elem()) {
			return false
		}
		dst.Set(v)
	case reflect.Struct:
		for i := range src.NumField() {
			if !deepCopy(dst.Field(i), src.Field(i)) {
				return false
			}
		}
	case reflect.Array:
		for i := range src.Len() {
			if !deepCopy(dst.Index(i), src.Index(i)) {
				return false
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return true
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			if !deepCopy(s.Index(i), src.Index(i)) {
				return false
			}
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return true
		}
		t := src.Type()
		m := reflect.MakeMapWithSize(t, src.Len())
		for it := src.MapRange(); it.Next(); {
			k, v := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			if !deepCopy(k, it.Key()) || !deepCopy(v, it.Value()) {
				return false
			}
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	default:
		return false
	}
	return true
}
