package engine

// The decoder: encoding/json's Unmarshal for the types of the model, over a
// document jsonraw.Validate accepted, into arena storage. It follows
// encoding/json's decode.go rule by rule, so that every document decodes to
// the same values (FuzzDecodeDifferential):
//   - object keys select fields by exact name, else by case folding
//     (jsonraw.Keys); unknown keys are skipped;
//   - a repeated key decodes again into what is there: a pointer's target
//     and a nested struct are merged into, a slice keeps its backing array
//     (and encoding/json's capacities, so stale elements resurface exactly
//     as they do there), a string or number is replaced;
//   - null sets pointers and slices to nil, json.RawMessage to `null`, and
//     leaves everything else unchanged;
//   - a value of the wrong JSON type, a number with a fraction or exponent
//     (or out of range) for an integer, is an error. encoding/json notes the
//     first such error and goes on; the decoder stops at it, which rejects
//     the same documents with the same first error.
//
// Strings alias the document when it holds them as they decode (no escape,
// valid UTF-8); the others are unescaped into the arena. json.RawMessage
// values alias the document too.

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bidguard/bidguard/jsonraw"
)

// decoder reads one validated document.
type decoder struct {
	data []byte
	doc  jsonraw.Doc
	ar   *arena
	// While track is set (one bid), dirty records anything that makes the
	// value's bytes decode otherwise under some conforming parser than
	// into what the decoder made of them: a key that is not a field's exact
	// name (unknown, case variant, escaped), a repeated key, a null, a
	// field that encoding/json always writes left out (re-encoding would
	// add it). Invalid UTF-8 and escaped surrogates (a lone one decodes to
	// U+FFFD here only) are found by the validating pass (jsonraw.Doc).
	track, dirty bool
}

// typeError is a value of the wrong JSON type, located by its path.
type typeError struct {
	path   []string // innermost first
	value  string   // "string", "number 1.5", ...
	offset int
	// null marks a null bid, which is an error of its own kind.
	null bool
}

func (e *typeError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		if i < len(e.path)-1 && s[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	if b.Len() == 0 {
		b.WriteString("value")
	}
	if e.null {
		return fmt.Sprintf("%s is null (offset %d)", b.String(), e.offset)
	}
	return fmt.Sprintf("%s: wrong JSON type %s (offset %d)", b.String(), e.value, e.offset)
}

// within adds a path segment (a field name, or "[i]") as the error bubbles
// up.
func within(err error, seg string) error {
	if te, ok := err.(*typeError); ok {
		te.path = append(te.path, seg)
	}
	return err
}

func (d *decoder) typeErr(i int, value string) error {
	return &typeError{value: value, offset: i}
}

// jsonType names the JSON value at data[i] for a type error.
func (d *decoder) jsonType(i int) string {
	switch d.data[i] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	end := jsonraw.ValueEnd(d.data, i)
	return "number " + clipLiteral(d.data[i:end])
}

func clipLiteral(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

// value decodes the value at data[i] into the value of plan p at ptr and
// returns the index just past it.
func (d *decoder) value(i int, p *plan, ptr unsafe.Pointer) (int, error) {
	data := d.data
	c := data[i]
	if c == 'n' { // null
		d.dirty = d.dirty || d.track
		switch p.kind {
		case kindPtr:
			*(*unsafe.Pointer)(ptr) = nil
		case kindSlice:
			*(*sliceHeader)(ptr) = sliceHeader{}
		case kindRaw:
			*(*[]byte)(ptr) = data[i : i+4 : i+4]
		}
		return i + 4, nil
	}
	switch p.kind {
	case kindPtr:
		target := (*unsafe.Pointer)(ptr)
		if *target == nil {
			*target = d.ar.alloc(p.elem, 1)
		}
		return d.value(i, p.elem, *target)
	case kindRaw:
		end := jsonraw.ValueEnd(data, i)
		*(*[]byte)(ptr) = data[i:end:end]
		return end, nil
	case kindString:
		if c != '"' {
			return i, d.typeErr(i, d.jsonType(i))
		}
		return d.str(i, (*string)(ptr))
	case kindInt:
		if c != '-' && (c < '0' || c > '9') {
			return i, d.typeErr(i, d.jsonType(i))
		}
		return d.integer(i, p, ptr)
	case kindFloat:
		if c != '-' && (c < '0' || c > '9') {
			return i, d.typeErr(i, d.jsonType(i))
		}
		end := jsonraw.ValueEnd(data, i)
		f, ok := jsonraw.Float(data[i:end])
		if !ok {
			return i, d.typeErr(i, "number "+clipLiteral(data[i:end]))
		}
		*(*float64)(ptr) = f
		return end, nil
	case kindSlice:
		if c != '[' {
			return i, d.typeErr(i, d.jsonType(i))
		}
		return d.array(i, p, (*sliceHeader)(ptr))
	case kindStruct:
		if c != '{' {
			return i, d.typeErr(i, d.jsonType(i))
		}
		return d.object(i, p, ptr)
	}
	panic("engine: unknown plan kind")
}

// str decodes the string at data[i].
func (d *decoder) str(i int, s *string) (int, error) {
	end, escaped := jsonraw.StringEnd(d.data, i)
	body := d.data[i+1 : end-1]
	if !escaped && d.doc.SpanValidUTF8(body) {
		*s = unsafe.String(unsafe.SliceData(body), len(body))
		return end, nil
	}
	// Unescaping never lengthens but each invalid byte becomes 3.
	var buf []byte
	if d.doc.ValidUTF8() {
		buf = jsonraw.UnescapeValid(d.ar.reserve(len(body)), body)
	} else {
		buf = jsonraw.Unescape(d.ar.reserve(3*len(body)), body)
	}
	t := d.ar.commit(len(buf))
	*s = unsafe.String(unsafe.SliceData(t), len(t))
	return end, nil
}

// integer decodes the number at data[i] as encoding/json does for an
// integer field (strconv.ParseInt): digits only, within the field's bits.
func (d *decoder) integer(i int, p *plan, ptr unsafe.Pointer) (int, error) {
	data := d.data
	j, neg := i, false
	if data[j] == '-' {
		j, neg = j+1, true
	}
	start := j
	var n uint64
	for ; j < len(data) && '0' <= data[j] && data[j] <= '9'; j++ {
		n = n*10 + uint64(data[j]-'0') // exact up to 19 digits
	}
	if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E') {
		end := jsonraw.ValueEnd(data, i)
		return i, d.typeErr(i, "number "+clipLiteral(data[i:end]))
	}
	limit := uint64(1) << (p.bits - 1) // -limit <= v < limit
	if j-start > 19 || (!neg && n >= limit) || (neg && n > limit) {
		return i, d.typeErr(i, "number "+clipLiteral(data[i:j]))
	}
	v := int64(n)
	if neg {
		v = -v
	}
	switch p.bits {
	case 8:
		*(*int8)(ptr) = int8(v)
	case 16:
		*(*int16)(ptr) = int16(v)
	case 32:
		*(*int32)(ptr) = int32(v)
	default:
		*(*int64)(ptr) = v
	}
	return j, nil
}

// object decodes the object at data[i] into the struct at base.
func (d *decoder) object(i int, p *plan, base unsafe.Pointer) (int, error) {
	data := d.data
	i = jsonraw.SkipSpace(data, i+1)
	if data[i] == '}' {
		d.dirty = d.dirty || d.track && p.written != 0
		return i + 1, nil
	}
	var seen uint64 // while tracking: the fields met, for repeats
	for {
		end, _ := jsonraw.StringEnd(data, i)
		f, exact := p.keys.MatchExact(data[i+1 : end-1])
		if d.track && !d.dirty {
			d.dirty = !exact || f >= 64 || seen&(1<<f) != 0
			seen |= 1 << (f & 63)
		}
		i = jsonraw.SkipSpace(data, end)
		i = jsonraw.SkipSpace(data, i+1) // past ':'
		var err error
		if f < 0 {
			i = jsonraw.ValueEnd(data, i)
		} else {
			fl := &p.fields[f]
			if i, err = d.value(i, fl.plan, at(base, fl.offset)); err != nil {
				return i, within(err, fl.name)
			}
		}
		i = jsonraw.SkipSpace(data, i)
		if data[i] == '}' {
			if d.track && seen&p.written != p.written {
				d.dirty = true
			}
			return i + 1, nil
		}
		i = jsonraw.SkipSpace(data, i+1) // past ','
	}
}

// array decodes the array at data[i] into the slice h as encoding/json does:
// element k decodes into what is at k (the backing array is kept), growing
// by encoding/json's capacities; the slice ends with as many elements as the
// array had, and an empty array leaves an empty, non-nil slice.
func (d *decoder) array(i int, p *plan, h *sliceHeader) (int, error) {
	data := d.data
	elem := p.elem
	i = jsonraw.SkipSpace(data, i+1)
	k := 0
	if data[i] != ']' {
		for {
			if k >= h.cap {
				c := elem.growth.next(h.cap)
				h.data = d.ar.grow(elem, h.data, h.cap, c)
				h.cap = c
			}
			if k >= h.len {
				h.len = k + 1
			}
			var err error
			if i, err = d.value(i, elem, unsafe.Add(h.data, uintptr(k)*elem.size)); err != nil {
				return i, within(err, "["+strconv.Itoa(k)+"]")
			}
			k++
			i = jsonraw.SkipSpace(data, i)
			if data[i] == ']' {
				break
			}
			i = jsonraw.SkipSpace(data, i+1) // past ','
		}
	}
	if k < h.len {
		h.len = k
	}
	if k == 0 {
		*h = sliceHeader{data: unsafe.Pointer(&zeroLength)}
	}
	return i + 1, nil
}

// zeroLength is where empty, non-nil slices point (as reflect.MakeSlice(t,
// 0, 0) does with the runtime's zero base).
var zeroLength [1]uint64

// decode decodes the whole document into the value of plan p at ptr.
func (d *decoder) decode(p *plan, ptr unsafe.Pointer) error {
	_, err := d.value(jsonraw.SkipSpace(d.data, 0), p, ptr)
	return err
}

// offsetIn returns the offset of sub, a subslice of data, in data.
func offsetIn(data, sub []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(data))))
}
