package engine

// The direct decoder: the bid request's decoding in one pass over its
// bytes, validating as it goes, with no token table. The request's tokens
// feed nothing but its own decoding (the scan table is the response's), so
// recording them and reading them back is work this pass does not do
// (cachegrind on the typical request: about a quarter of DecodeRequest's
// instructions).
//
// It decodes exactly as the token decoder (unmarshal.go) does, rule by
// rule, into the same arena, and checks exactly what jsonraw.Validate
// checks (the strings and numbers through jsonraw's own scans). It never
// reports an error of its own: at the first thing it does not take (a
// syntax error, a value of the wrong type, nesting deeper than
// maxDirectDepth) it declines, and DecodeRequest decodes the document again
// through the token path, whose verdict and error are the answer. A
// declined document costs both passes; a document the direct decoder takes
// is one the token path decodes to the same values
// (FuzzDecodeRequestDirect).

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/bidguard/bidguard/jsonraw"
)

// errDeclined is the direct decoder's only error: decode through the
// tokens instead. It never leaves the package.
var errDeclined = errors.New("engine: the direct decoder declined the document")

// maxDirectDepth is the deepest nesting the direct decoder takes (it
// recurses; a bid request nests about six deep). Deeper documents go to
// the token path, whose walk has no recursion.
const maxDirectDepth = 32

// directDecoder decodes one document from its bytes.
type directDecoder struct {
	data  []byte
	ar    *arena
	depth int
}

// decode decodes the whole document into the value of plan p at ptr: one
// value between JSON's white space.
func (d *directDecoder) decode(p *plan, ptr unsafe.Pointer) error {
	i := jsonraw.SkipSpace(d.data, 0)
	end, err := d.value(i, p, ptr)
	if err != nil {
		return err
	}
	if jsonraw.SkipSpace(d.data, end) != len(d.data) {
		return errDeclined
	}
	return nil
}

// value decodes the value at data[i] into the value of plan p at ptr and
// returns the index just past it. A nil p validates the value and stores
// nothing (an unknown key's value).
func (d *directDecoder) value(i int, p *plan, ptr unsafe.Pointer) (int, error) {
	data := d.data
	if i >= len(data) {
		return i, errDeclined
	}
	c := data[i]
	if c == 'n' {
		if len(data)-i < 4 || string(data[i:i+4]) != "null" {
			return i, errDeclined
		}
		if p != nil {
			switch p.kind {
			case kindPtr:
				*(*unsafe.Pointer)(ptr) = nil
			case kindSlice:
				*(*sliceHeader)(ptr) = sliceHeader{}
			case kindRaw:
				*(*[]byte)(ptr) = data[i : i+4 : i+4]
			}
		}
		return i + 4, nil
	}
	if p == nil {
		return d.skip(i)
	}
	for p.kind == kindPtr {
		target := (*unsafe.Pointer)(ptr)
		if *target == nil {
			*target = d.ar.alloc(p.elem, 1)
		}
		p, ptr = p.elem, *target
	}
	switch p.kind {
	case kindRaw:
		end, err := d.skip(i)
		if err != nil {
			return i, err
		}
		*(*[]byte)(ptr) = data[i:end:end]
		return end, nil
	case kindString:
		if c != '"' {
			return i, errDeclined
		}
		return d.str(i, (*string)(ptr))
	case kindInt:
		return d.integer(i, p, ptr)
	case kindFloat:
		if c != '-' && (c < '0' || c > '9') {
			return i, errDeclined
		}
		end, ok := jsonraw.ScanNumber(data, i)
		if !ok {
			return i, errDeclined
		}
		f, ok := jsonraw.Float(data[i:end])
		if !ok {
			return i, errDeclined
		}
		*(*float64)(ptr) = f
		return end, nil
	case kindSlice:
		if c != '[' {
			return i, errDeclined
		}
		return d.array(i, p, (*sliceHeader)(ptr))
	case kindStruct:
		if c != '{' {
			return i, errDeclined
		}
		return d.object(i, p, ptr)
	}
	panic("engine: unknown plan kind")
}

// typed is value for a member or an element: the usual values (a string,
// an integer, an array or an object where the plan wants one) without
// value's dispatch.
func (d *directDecoder) typed(i int, p *plan, ptr unsafe.Pointer) (int, error) {
	if i < len(d.data) {
		switch c := d.data[i]; {
		case c == '"' && p.kind == kindString:
			return d.str(i, (*string)(ptr))
		case c >= '0' && c <= '9' && p.kind == kindInt:
			return d.integer(i, p, ptr)
		case c == '[' && p.kind == kindSlice:
			return d.array(i, p, (*sliceHeader)(ptr))
		case c == '{' && p.kind == kindStruct:
			return d.object(i, p, ptr)
		}
	}
	return d.value(i, p, ptr)
}

// skipSpace is jsonraw.SkipSpace with the usual case, no white space,
// told by one comparison (every white space byte is below '!').
func skipSpace(data []byte, i int) int {
	if i < len(data) && data[i] > ' ' {
		return i
	}
	return jsonraw.SkipSpace(data, i)
}

// skip validates the value at data[i] (not null) and returns the index
// just past it.
func (d *directDecoder) skip(i int) (int, error) {
	data := d.data
	switch data[i] {
	case '{':
		return d.object(i, nil, nil)
	case '[':
		return d.array(i, nil, nil)
	case '"':
		if i <= len(data)-9 {
			if n := jsonraw.ShortString(binary.LittleEndian.Uint64(data[i+1:])); n != 0 {
				return i + n, nil
			}
		}
		end, _, _, ok := jsonraw.ScanString(data, i)
		if !ok {
			return i, errDeclined
		}
		return end, nil
	case 't':
		if len(data)-i < 4 || string(data[i:i+4]) != "true" {
			return i, errDeclined
		}
		return i + 4, nil
	case 'f':
		if len(data)-i < 5 || string(data[i:i+5]) != "false" {
			return i, errDeclined
		}
		return i + 5, nil
	}
	end, ok := jsonraw.ScanNumber(data, i)
	if !ok {
		return i, errDeclined
	}
	return end, nil
}

// str decodes the string at data[i] as the token decoder's str does: the
// document's bytes when they are the string, else unescaped into the
// arena.
func (d *directDecoder) str(i int, s *string) (int, error) {
	if i <= len(d.data)-9 {
		// The usual string without a call: the document's bytes.
		if n := jsonraw.ShortString(binary.LittleEndian.Uint64(d.data[i+1:])); n != 0 {
			*s = unsafe.String(&d.data[i+1], n-2)
			return i + n, nil
		}
	}
	end, esc, utf8OK, ok := jsonraw.ScanString(d.data, i)
	if !ok {
		return i, errDeclined
	}
	body := d.data[i+1 : end-1]
	if !esc && utf8OK {
		*s = unsafe.String(unsafe.SliceData(body), len(body))
		return end, nil
	}
	// Unescaping never lengthens but each invalid byte becomes 3.
	var buf []byte
	if utf8OK {
		buf = jsonraw.UnescapeValid(d.ar.reserve(len(body)), body)
	} else {
		buf = jsonraw.Unescape(d.ar.reserve(3*len(body)), body)
	}
	text := d.ar.commit(len(buf))
	*s = unsafe.String(unsafe.SliceData(text), len(text))
	return end, nil
}

// integer decodes the number at data[i] as the token decoder's integer
// does: digits only, within the field's bits.
func (d *directDecoder) integer(i int, p *plan, ptr unsafe.Pointer) (int, error) {
	data := d.data
	c := data[i]
	if c >= '1' && c <= '9' && i <= len(data)-8 {
		// The usual integer without a call, read in the word that
		// validates it.
		x := binary.LittleEndian.Uint64(data[i:])
		if n := jsonraw.ShortNumber(x); n != 0 && storeInt(p, ptr, digitsValue(x<<(uint(8*(8-n))&63)), false) {
			return i + n, nil
		}
	}
	if c != '-' && (c < '0' || c > '9') {
		return i, errDeclined
	}
	end, ok := jsonraw.ScanNumber(data, i)
	if !ok {
		return i, errDeclined
	}
	j, neg := i, false
	if data[j] == '-' {
		j, neg = j+1, true
	}
	digits := end - j
	if digits <= 8 && j <= len(data)-8 {
		// The usual integer: its up to eight bytes read at once.
		if n, ok := eightDigits(binary.LittleEndian.Uint64(data[j:]), digits); ok && storeInt(p, ptr, n, neg) {
			return end, nil
		}
	}
	var n uint64
	for k := j; k < end; k++ {
		c := data[k]
		if c < '0' || c > '9' { // a fraction or an exponent
			return i, errDeclined
		}
		n = n*10 + uint64(c-'0') // exact up to 19 digits
	}
	if digits > 19 || !storeInt(p, ptr, n, neg) {
		return i, errDeclined
	}
	return end, nil
}

// object decodes the object at data[i] into the struct of plan p at base
// (nil p: validates it).
func (d *directDecoder) object(i int, p *plan, base unsafe.Pointer) (int, error) {
	data := d.data
	if d.depth++; d.depth > maxDirectDepth {
		return i, errDeclined
	}
	i = jsonraw.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		d.depth--
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return i, errDeclined
		}
		keyEnd := 0
		if i <= len(data)-9 {
			// The usual key without a call.
			if n := jsonraw.ShortString(binary.LittleEndian.Uint64(data[i+1:])); n != 0 {
				keyEnd = i + n
			}
		}
		if keyEnd == 0 {
			var ok bool
			if keyEnd, _, _, ok = jsonraw.ScanString(data, i); !ok {
				return i, errDeclined
			}
		}
		j := keyEnd
		if j >= len(data) || data[j] != ':' { // white space first, unusual
			if j = jsonraw.SkipSpace(data, j); j >= len(data) || data[j] != ':' {
				return j, errDeclined
			}
		}
		j = skipSpace(data, j+1)
		var err error
		if p == nil {
			j, err = d.value(j, nil, nil)
		} else if f, _ := p.keys.MatchExact(inBetween(data, i, keyEnd)); f < 0 {
			j, err = d.value(j, nil, nil)
		} else {
			fl := &p.fields[f]
			j, err = d.typed(j, fl.plan, at(base, fl.offset))
		}
		if err != nil {
			return j, err
		}
		if i = skipSpace(data, j); i >= len(data) {
			return i, errDeclined
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			d.depth--
			return i + 1, nil
		default:
			return i, errDeclined
		}
	}
}

// array decodes the array at data[i] into the slice h of plan p as the
// token decoder's array does (nil p: validates it).
func (d *directDecoder) array(i int, p *plan, h *sliceHeader) (int, error) {
	data := d.data
	if d.depth++; d.depth > maxDirectDepth {
		return i, errDeclined
	}
	i = jsonraw.SkipSpace(data, i+1)
	n := 0
	if i >= len(data) || data[i] != ']' {
		for {
			var err error
			if p == nil {
				i, err = d.value(i, nil, nil)
			} else {
				elem := p.elem
				if n >= h.cap {
					if h.cap == 0 {
						// The first step, a new region: what grow does for a
						// slice of no capacity (nil, or an empty one's zeroLength,
						// never the end of a chunk).
						h.data, h.cap = d.ar.alloc(elem, elem.growth.first), elem.growth.first
					} else {
						c := elem.growth.next(h.cap)
						h.data, h.cap = d.ar.grow(elem, h.data, h.cap, c), c
					}
				}
				if n >= h.len {
					h.len = n + 1
				}
				ptr := unsafe.Add(h.data, uintptr(n)*elem.size)
				n++
				i, err = d.typed(i, elem, ptr)
			}
			if err != nil {
				return i, err
			}
			if i = skipSpace(data, i); i >= len(data) {
				return i, errDeclined
			}
			if data[i] == ']' {
				break
			}
			if data[i] != ',' {
				return i, errDeclined
			}
			i = skipSpace(data, i+1)
		}
	}
	d.depth--
	if p != nil {
		if n < h.len {
			h.len = n
		}
		if n == 0 {
			*h = sliceHeader{data: unsafe.Pointer(&zeroLength)}
		}
	}
	return i + 1, nil
}
