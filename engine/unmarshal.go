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
//
// The decoder reads the tokens the validating pass recorded
// (jsonraw.ValidateTokens), not the bytes: string ends, escapes, container
// ends and the places of keys and values are known, so nothing is scanned
// twice. Its positions are token indexes. The usual members and elements (a
// string without escape, an integer, a nested array or object) are taken
// in the object and array loops without value's call and dispatch, and an
// integer of up to eight digits is read in one word (eightDigits).
//
// The bid request is decoded by the direct decoder (direct.go), one pass
// over its bytes with no token table, and through this decoder only when
// the direct one declines it.
//
// Cost, on the benchmarks' typical documents (one core of a shared 2-core
// machine, fastest runs, no allocation): DecodeResponse about 3.6 µs for the
// 2.2 KB response (3 bids), about 43,700 instructions (cachegrind; 40,600
// without white space), of which the validating pass is about half and the
// rest mostly key matching (jsonraw.Keys), unescaping strings that hold
// escapes (a creative's markup) and storing into the arena. The 970-byte
// request (3 imps) took about 43,000 instructions through the tokens;
// through the direct decoder it takes about 29,600 (27,400 without white
// space).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bidguard/bidguard/jsonraw"
)

// decoder reads one validated document through its tokens.
type decoder struct {
	data []byte
	toks []jsonraw.Token
	doc  jsonraw.Doc
	ar   *arena
	// dec, when set, collects the strings str had to decode; the token's
	// Next becomes the index + 1 (for the scan table).
	dec *[]string
	// bidArrays, when set, collects the non-empty arrays read into a
	// seatbid's bids (rawBidsPlan), for the bids a later key replaces.
	bidArrays *[]int
	// While track is set (one bid), dirty records anything that makes the
	// value's bytes decode otherwise under some conforming parser than
	// into what the decoder made of them: a key that is not a field's exact
	// name (unknown, case variant, escaped), a repeated key, a null, a
	// field that encoding/json always writes left out (re-encoding would
	// add it). Invalid UTF-8 and escaped surrogates (a lone one decodes to
	// U+FFFD here only) are found by the validating pass (jsonraw.Doc).
	track, dirty bool
	// present is whether the last kindPresentFloat value decoded was a
	// number (its pointer set), not null.
	present bool
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
	var te *typeError
	if errors.As(err, &te) {
		te.path = append(te.path, seg)
	}
	return err
}

func (d *decoder) typeErr(i int, value string) error {
	return &typeError{value: value, offset: i}
}

// jsonType names the JSON value of token k for a type error.
func (d *decoder) jsonType(k int) string {
	t := &d.toks[k]
	switch d.data[t.Off] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	return "number " + clipLiteral(d.data[t.Off:t.End])
}

// skip returns the index of the token after the value of token k.
func (d *decoder) skip(k int) int {
	if t := &d.toks[k]; t.Kind == jsonraw.TokObject || t.Kind == jsonraw.TokArray {
		return int(t.Next)
	}
	return k + 1
}

// tokenAt returns the index of the token at offset off, which starts a
// value of the document.
func (d *decoder) tokenAt(off int) int {
	return sort.Search(len(d.toks), func(k int) bool { return int(d.toks[k].Off) >= off })
}

func clipLiteral(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

// value decodes the value of token k into the value of plan p at ptr and
// returns the index of the token after it.
func (d *decoder) value(k int, p *plan, ptr unsafe.Pointer) (int, error) {
	data := d.data
	t := &d.toks[k]
	i := int(t.Off)
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
		case kindPresentFloat:
			*(*float64)(ptr), d.present = 0, false
		}
		return k + 1, nil
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
		end := int(t.End)
		*(*[]byte)(ptr) = data[i:end:end]
		return d.skip(k), nil
	case kindString:
		if c != '"' {
			return k, d.typeErr(i, d.jsonType(k))
		}
		return d.str(k, (*string)(ptr))
	case kindInt:
		if c != '-' && (c < '0' || c > '9') {
			return k, d.typeErr(i, d.jsonType(k))
		}
		return d.integer(k, p, ptr)
	case kindFloat, kindPresentFloat:
		if c != '-' && (c < '0' || c > '9') {
			return k, d.typeErr(i, d.jsonType(k))
		}
		num := data[i:t.End]
		f, ok := jsonraw.Float(num)
		if !ok {
			return k, d.typeErr(i, "number "+clipLiteral(num))
		}
		*(*float64)(ptr) = f
		if p.kind == kindPresentFloat {
			d.present = true
		}
		return k + 1, nil
	case kindSlice:
		if c != '[' {
			return k, d.typeErr(i, d.jsonType(k))
		}
		return d.array(k, p, (*sliceHeader)(ptr))
	case kindStruct:
		if c != '{' {
			return k, d.typeErr(i, d.jsonType(k))
		}
		return d.object(k, p, ptr)
	}
	panic("engine: unknown plan kind")
}

// str decodes the string of token k.
func (d *decoder) str(k int, s *string) (int, error) {
	t := &d.toks[k]
	body := d.data[t.Off+1 : t.End-1]
	if !t.Escaped && d.doc.SpanValidUTF8(body) {
		*s = unsafe.String(unsafe.SliceData(body), len(body))
		return k + 1, nil
	}
	// Unescaping never lengthens but each invalid byte becomes 3.
	var buf []byte
	if d.doc.ValidUTF8() {
		buf = jsonraw.UnescapeValid(d.ar.reserve(len(body)), body)
	} else {
		buf = jsonraw.Unescape(d.ar.reserve(3*len(body)), body)
	}
	text := d.ar.commit(len(buf))
	*s = unsafe.String(unsafe.SliceData(text), len(text))
	if d.dec != nil {
		*d.dec = append(*d.dec, *s)
		t.Next = uint32(len(*d.dec))
	}
	return k + 1, nil
}

// plainString stores the string of token t at ptr as the document holds it,
// when it is a string without escape in a valid UTF-8 document, and reports
// whether it did (else the token is value's).
func (d *decoder) plainString(t *jsonraw.Token, ptr unsafe.Pointer) bool {
	if t.Kind != jsonraw.TokString || t.Escaped || !d.doc.ValidUTF8() {
		return false
	}
	// The token's bytes, without bounds checks: a string token of the
	// document spans data[Off:End], its quotes at either end.
	*(*string)(ptr) = unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(d.data)), t.Off+1)), t.End-t.Off-2)
	return true
}

// keyBytes returns the bytes between the quotes of key token t (inBetween).
func (d *decoder) keyBytes(t *jsonraw.Token) []byte {
	return inBetween(d.data, int(t.Off), int(t.End))
}

// inBetween returns data[start+1:end-1], the bytes between the quotes of
// the string data[start:end] of a validated document, without its bounds
// checks: the capacity runs to the end of data's, as the slicing's does
// (Keys.MatchExact reads a short key in one word when it can).
func inBetween(data []byte, start, end int) []byte {
	h := sliceHeader{
		data: unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), start+1),
		len:  end - start - 2,
		cap:  cap(data) - start - 1,
	}
	return *(*[]byte)(unsafe.Pointer(&h))
}

// integer decodes the number at data[i] as encoding/json does for an
// integer field (strconv.ParseInt): digits only, within the field's bits.
func (d *decoder) integer(k int, p *plan, ptr unsafe.Pointer) (int, error) {
	data := d.data
	t := &d.toks[k]
	i := int(t.Off)
	j, neg := i, false
	if data[j] == '-' {
		j, neg = j+1, true
	}
	start := j
	var n uint64
	if digits := int(t.End) - j; digits <= 8 && j <= len(data)-8 {
		// The usual integer: its up to eight bytes read at once.
		// Out of range, it is the loop's to build the error.
		if n, ok := eightDigits(binary.LittleEndian.Uint64(data[j:]), digits); ok && storeInt(p, ptr, n, neg) {
			return k + 1, nil
		}
	}
	for ; j < len(data) && '0' <= data[j] && data[j] <= '9'; j++ {
		n = n*10 + uint64(data[j]-'0') // exact up to 19 digits
	}
	if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E') {
		return k, d.typeErr(i, "number "+clipLiteral(data[i:t.End]))
	}
	if j-start > 19 || !storeInt(p, ptr, n, neg) {
		return k, d.typeErr(i, "number "+clipLiteral(data[i:j]))
	}
	return k + 1, nil
}

// storeInt stores the magnitude n (with its sign) into the integer of plan p
// at ptr, and reports whether the value fits its bits (else stores nothing).
func storeInt(p *plan, ptr unsafe.Pointer, n uint64, neg bool) bool {
	limit := uint64(1) << (p.bits - 1) // -limit <= v < limit
	if (!neg && n >= limit) || (neg && n > limit) {
		return false
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
	return true
}

// eightDigits reads the n (1 to 8) bytes at the start of x, the bytes of a
// number in document order, as a decimal integer; ok is false when one of
// them is not a digit.
func eightDigits(x uint64, n int) (v uint64, ok bool) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	sh := uint(8*(8-n)) & 63
	// Bytes below '0' (the borrow), above '9' (the carry into the high
	// bit) or non-ASCII, among the first n: exact up to the first such
	// byte, which is all that matters.
	if ((x-lo*'0')&^x|(x+lo*(0x80-'9'-1))|x)&(hi>>sh) != 0 || n <= 0 {
		return 0, false
	}
	// The digits to the top of the word, as if led by zeros.
	return digitsValue(x << sh), true
}

// digitsValue is the value of the digits at the top of x, its lower bytes
// zero (x shifted left by 8*(8-n) for n digits): eightDigits without the
// check, for digits known to be digits (as jsonraw.ShortNumber finds them).
func digitsValue(x uint64) uint64 {
	const lo = 0x0101010101010101
	// Combined in pairs, fours and eights (the first digit is the lowest
	// byte, so the most significant).
	x &= lo * 0x0f
	x = x * (10<<8 + 1) >> 8
	x = (x & 0x00ff00ff00ff00ff) * (100<<16 + 1) >> 16
	return (x & 0x0000ffff0000ffff) * (10000<<32 + 1) >> 32
}

// object decodes the object of token k into the struct at base.
func (d *decoder) object(k int, p *plan, base unsafe.Pointer) (int, error) {
	data := d.data
	end := int(d.toks[k].Next) // past the closer
	j := k + 1
	if j == end-1 {
		d.dirty = d.dirty || d.track && p.written != 0
		return end, nil
	}
	var seen uint64 // while tracking: the fields met, for repeats
	for j < end-1 {
		key := &d.toks[j]
		f, exact := p.keys.MatchExact(d.keyBytes(key))
		if d.track && !d.dirty {
			d.dirty = !exact || f >= 64 || seen&(1<<f) != 0
			seen |= 1 << (f & 63)
		}
		j++ // the value
		if f < 0 {
			j = d.skip(j)
			continue
		}
		fl := &p.fields[f]
		ptr := at(base, fl.offset)
		// The usual values without value's call and dispatch: a string
		// as the document holds it, an integer.
		switch t := &d.toks[j]; fl.plan.kind {
		case kindString:
			if d.plainString(t, ptr) {
				j++
				continue
			}
		case kindInt:
			if c := data[t.Off]; c >= '0' && c <= '9' {
				var err error
				if j, err = d.integer(j, fl.plan, ptr); err != nil {
					return j, within(err, fl.name)
				}
				continue
			}
		case kindSlice:
			if t.Kind == jsonraw.TokArray {
				var err error
				if j, err = d.array(j, fl.plan, (*sliceHeader)(ptr)); err != nil {
					return j, within(err, fl.name)
				}
				continue
			}
		}
		var err error
		if j, err = d.value(j, fl.plan, ptr); err != nil {
			return j, within(err, fl.name)
		}
	}
	if d.track && seen&p.written != p.written {
		d.dirty = true
	}
	return end, nil
}

// array decodes the array of token k into the slice h as encoding/json
// does: element n decodes into what is at n (the backing array is kept),
// growing by encoding/json's capacities; the slice ends with as many
// elements as the array had, and an empty array leaves an empty, non-nil
// slice.
func (d *decoder) array(k int, p *plan, h *sliceHeader) (int, error) {
	elem := p.elem
	end := int(d.toks[k].Next) // past the closer
	n := 0
	for j := k + 1; j < end-1; {
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
		// The usual elements as object takes the usual values.
		switch t := &d.toks[j]; elem.kind {
		case kindString:
			if d.plainString(t, ptr) {
				j++
				continue
			}
		case kindInt:
			if c := d.data[t.Off]; c >= '0' && c <= '9' {
				var err error
				if j, err = d.integer(j, elem, ptr); err != nil {
					return j, within(err, "["+strconv.Itoa(n-1)+"]")
				}
				continue
			}
		case kindStruct:
			if t.Kind == jsonraw.TokObject {
				var err error
				if j, err = d.object(j, elem, ptr); err != nil {
					return j, within(err, "["+strconv.Itoa(n-1)+"]")
				}
				continue
			}
		}
		var err error
		if j, err = d.value(j, elem, ptr); err != nil {
			return j, within(err, "["+strconv.Itoa(n-1)+"]")
		}
	}
	if n < h.len {
		h.len = n
	}
	if p == rawBidsPlan && n > 0 && d.bidArrays != nil {
		*d.bidArrays = append(*d.bidArrays, k)
	}
	if n == 0 {
		*h = sliceHeader{data: unsafe.Pointer(&zeroLength)}
	}
	return end, nil
}

// zeroLength is where empty, non-nil slices point (as reflect.MakeSlice(t,
// 0, 0) does with the runtime's zero base).
var zeroLength [1]uint64

// decode decodes the whole document into the value of plan p at ptr.
func (d *decoder) decode(p *plan, ptr unsafe.Pointer) error {
	_, err := d.value(0, p, ptr)
	return err
}

// offsetIn returns the offset of sub, a subslice of data, in data.
func offsetIn(data, sub []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(data))))
}
