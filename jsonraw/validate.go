package jsonraw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth is the deepest nesting Validate accepts: at most this many
// objects and arrays open at once (docs/gates.md, "Decoding").
const MaxDepth = 1000

// The kinds of Error.
var (
	// ErrEmpty: the document is empty or only whitespace.
	ErrEmpty = errors.New("empty document")
	// ErrSyntax: not JSON as encoding/json reads it.
	ErrSyntax = errors.New("malformed JSON")
	// ErrDepth: nesting deeper than MaxDepth.
	ErrDepth = fmt.Errorf("nesting deeper than %d", MaxDepth)
	// ErrRange: a number that overflows float64.
	ErrRange = errors.New("number overflows float64")
	// ErrTooLong: ValidateTokens' document is over MaxTokenDoc bytes.
	ErrTooLong = errors.New("document over 4 GiB")
)

// Error is why Validate rejected a document. errors.Is(err, ErrSyntax) and
// the other kinds tell them apart.
type Error struct {
	// Err is ErrEmpty, ErrSyntax, ErrDepth, ErrRange or ErrTooLong.
	Err error
	// Offset is the byte offset of the problem.
	Offset int
	// Detail says what was wrong (for ErrSyntax) or the number, clipped
	// (for ErrRange).
	Detail string
}

func (e *Error) Error() string {
	switch e.Err {
	case ErrSyntax:
		return fmt.Sprintf("malformed JSON at offset %d: %s", e.Offset, e.Detail)
	case ErrRange:
		return fmt.Sprintf("number %s overflows float64 (offset %d)", e.Detail, e.Offset)
	case ErrEmpty:
		return e.Err.Error()
	}
	return fmt.Sprintf("%s (offset %d)", e.Err, e.Offset)
}

func (e *Error) Unwrap() error { return e.Err }

// Doc is what Validate learned about a document it accepted.
type Doc struct {
	flags docFlags
}

// docFlags are what the string scans noticed.
type docFlags uint8

const (
	badUTF8   docFlags = 1 << iota // a byte of invalid UTF-8
	surrogate                      // a \u escape of a UTF-16 surrogate (D800-DFFF)
	escaped                        // the string just scanned holds an escape (scanString's; cleared after)
)

// ValidUTF8 reports whether the whole document is valid UTF-8.
func (d Doc) ValidUTF8() bool { return d.flags&badUTF8 == 0 }

// SurrogateEscapes reports whether a string of the document holds a \u
// escape of a UTF-16 surrogate, paired or not: encoding/json decodes a lone
// one to U+FFFD, other parsers to a lone surrogate.
func (d Doc) SurrogateEscapes() bool { return d.flags&surrogate != 0 }

// SpanValidUTF8 reports whether span, a part of the document, is valid
// UTF-8. It costs nothing for a document without invalid UTF-8 (the usual
// case) and reads span otherwise.
func (d Doc) SpanValidUTF8(span []byte) bool { return d.ValidUTF8() || utf8.Valid(span) }

// plainString marks the string bytes that need no attention: printable
// ASCII but the quote and the backslash.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Validate checks that data is one JSON value exactly as encoding/json
// accepts it (only whitespace around it), nested at most MaxDepth deep, with
// no number that overflows float64. It allocates nothing on success.
func Validate(data []byte) (Doc, error) {
	_, doc, err := validate(data, nil, false)
	return doc, err
}

// Token is one token of a document ValidateTokens accepted: data[Off:End]
// is a string with its quotes, a number or literal, a whole object or
// array (its opener's token), or the one byte of a closer.
type Token struct {
	Off, End uint32
	// Next is, for an opener, the index of the token after its closer (the
	// next value's, key's or closer's): a reader skips a container in one
	// step. ValidateTokens leaves it 0 for other tokens: a reader may keep
	// its own number there (the engine's decoder marks decoded strings).
	Next uint32
	Kind TokenKind
	// Escaped: a string (or key) holding a backslash escape.
	Escaped bool
}

// TokenKind tells what a Token is.
type TokenKind uint8

// The token kinds.
const (
	TokObject TokenKind = iota + 1 // '{'
	TokArray                       // '['
	TokClose                       // '}' or ']'
	TokKey                         // an object key
	TokString                      // a string value
	TokScalar                      // a number, true, false or null
)

// MaxTokenDoc is the largest document ValidateTokens records tokens for
// (offsets are 32-bit).
const MaxTokenDoc = 1<<32 - 1

// ValidateTokens is Validate that also appends to *toks every token of the
// document, in document order (the first is the top-level value), so that a
// later reader need not scan the bytes again. On error *toks holds the
// tokens before it, openers unfinished. A document over MaxTokenDoc bytes
// is an error (ErrTooLong).
func ValidateTokens(data []byte, toks *[]Token) (Doc, error) {
	if len(data) > MaxTokenDoc {
		return Doc{}, &Error{Err: ErrTooLong}
	}
	t, doc, err := validate(data, *toks, true)
	*toks = t
	return doc, err
}

// ScanString reads the string at data[i] (data[i] is '"') as Validate
// does: end is the index just past it, esc whether it holds a backslash
// escape, utf8OK whether its bytes are valid UTF-8. ok is false where
// Validate rejects the document (end is then meaningless). It is for a
// reader that validates as it goes, checking the grammar around the strings
// and numbers itself. Such a reader takes the usual short string with
// ShortString first, inlined: ScanString does not try it again.
func ScanString(data []byte, i int) (end int, esc, utf8OK, ok bool) {
	end, bad, err := scanString(data, i, 0)
	return end, bad&escaped != 0, bad&badUTF8 == 0, err == nil
}

// ScanNumber reads the number at data[i] (i < len(data)) as Validate does:
// end is the index just past it; ok is false where Validate rejects the
// document (no number there, or one that overflows float64). What follows
// the number is the caller's to check, as for ScanString.
func ScanNumber(data []byte, i int) (end int, ok bool) {
	if i <= len(data)-8 && data[i] != '0' {
		if n := ShortNumber(binary.LittleEndian.Uint64(data[i:])); n != 0 {
			return i + n, true
		}
	}
	end, err := scanNumber(data, i)
	return end, err == nil
}

// noOpen is the open container of the top level.
const noOpen = -1

// validate is Validate, and ValidateTokens when rec is set. It appends the
// tokens to toks, a local slice rather than the caller's (appending then
// costs no load and store through a pointer), and returns it.
//
// While an object or array is open its opener's Next holds the enclosing
// opener's index (noOpen at the top): the open containers form a chain and
// need no stack.
func validate(data []byte, toks []Token, rec bool) ([]Token, Doc, error) {
	i := SkipSpace(data, 0)
	if i == len(data) {
		return toks, Doc{}, &Error{Err: ErrEmpty}
	}
	var objects [MaxDepth/64 + 1]uint64 // bit d: the container at depth d is an object
	depth := 0
	cur := noOpen     // the innermost open container's token
	inKey := false    // an object's member is next, not a value
	inObject := false // the innermost open container is an object
	var bad docFlags
value:
	for {
		if inKey {
			inKey = false
			// `"key":`; the usual key, with no white space between it
			// and its colon, without a call (member has the whole
			// rule). The white space after the colon is the value's
			// dispatch's, before the key the branch's below.
		key:
			start, end := i, 0
			if i <= len(data)-9 && data[i] == '"' {
				if n := ShortString(binary.LittleEndian.Uint64(data[i+1:])); n != 0 {
					end = i + n
				}
			}
			if end != 0 && end < len(data)-1 && data[end] == ':' {
				// One space after the colon, as indented JSON has it,
				// taken here too.
				if i = end + 1; data[i] == ' ' {
					i++
				}
			} else if i < len(data) && isSpace[data[i]] {
				// White space before the key: after a comma it is
				// left to here.
				i = SkipSpace(data, i+1)
				goto key
			} else {
				var err *Error
				if end, i, bad, err = member(data, i, bad); err != nil {
					return toks, Doc{}, err
				}
			}
			if rec {
				toks = push(toks, start, end, 0, TokKey, bad&escaped != 0)
			}
			bad &^= escaped
		}
	dispatch:
		if i >= len(data) {
			return toks, Doc{}, syntaxError(i, "unexpected end of input")
		}
		start, kind := i, TokScalar // kind 0: nothing left to record
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r':
			// White space before a value: after a colon or a comma it
			// is left to here, where the usual value, with none, costs
			// no test of its own.
			i = SkipSpace(data, i+1)
			goto dispatch
		case '{', '[':
			if depth == MaxDepth {
				return toks, Doc{}, &Error{Err: ErrDepth, Offset: i}
			}
			closer, opener := byte(']'), TokArray
			if c == '{' {
				objects[depth>>6] |= 1 << (depth & 63)
				closer, opener = '}', TokObject
			} else {
				objects[depth>>6] &^= 1 << (depth & 63)
			}
			if rec {
				toks = push(toks, i, 0, uint32(int32(cur)), opener, false)
				cur = len(toks) - 1
			}
			depth++
			inObject = c == '{'
			i = SkipSpace(data, i+1)
			if i >= len(data) || data[i] != closer {
				inKey = c == '{'
				continue value
			}
			if rec {
				toks, cur = closeAt(toks, i, cur)
			}
			depth--
			inObject = depth > 0 && objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
			i++
			kind = 0
		case '"':
			n := 0
			if i <= len(data)-9 {
				n = ShortString(binary.LittleEndian.Uint64(data[i+1:]))
			}
			if n != 0 {
				i += n
			} else {
				var err *Error
				if i, bad, err = scanString(data, i, bad); err != nil {
					return toks, Doc{}, err
				}
			}
			kind = TokString
		case 't', 'f', 'n':
			word := "null"
			if c == 't' {
				word = "true"
			} else if c == 'f' {
				word = "false"
			}
			var err *Error
			if i, err = literal(data, i, word); err != nil {
				return toks, Doc{}, err
			}
		default:
			if i <= len(data)-8 && c != '0' {
				if n := ShortNumber(binary.LittleEndian.Uint64(data[i:])); n != 0 {
					i += n
					break
				}
			}
			var err *Error
			if i, err = scanNumber(data, i); err != nil {
				return toks, Doc{}, err
			}
		}
		if rec && kind != 0 {
			toks = push(toks, start, i, 0, kind, bad&escaped != 0)
		}
		bad &^= escaped
		// After a value: close containers, or find the next one.
		for {
			i = skipSpace(data, i)
			if depth == 0 {
				if i != len(data) {
					return toks, Doc{}, syntaxError(i, "data after the top-level value")
				}
				return toks, Doc{flags: bad}, nil
			}
			if i >= len(data) {
				return toks, Doc{}, syntaxError(i, "unexpected end of input")
			}
			switch c := data[i]; {
			case c == ',':
				i++ // the white space after it is the key's or the value's
				inKey = inObject
				continue value
			case inObject && c == '}', !inObject && c == ']':
				if rec {
					toks, cur = closeAt(toks, i, cur)
				}
				depth--
				inObject = depth > 0 && objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
				i++
			default:
				return toks, Doc{}, syntaxError(i, "unexpected "+quoteByte(c)+" after a value")
			}
		}
	}
}

// closeAt appends the closer at off of the opener cur, sets the opener's End
// and Next, and returns the enclosing opener.
func closeAt(toks []Token, off, cur int) ([]Token, int) {
	// Appended as push did before it stopped clearing the slot: push's
	// body would take closeAt over the inlining budget.
	toks = append(toks, Token{})
	c := &toks[len(toks)-1]
	c.Off, c.End, c.Next, c.Kind, c.Escaped = uint32(off), uint32(off+1), 0, TokClose, false
	t := &toks[cur]
	parent := int(int32(t.Next))
	t.End, t.Next = uint32(off+1), uint32(len(toks))
	return toks, parent
}

// push appends a token, its fields written in place: appending the token as
// a composite literal builds it on the stack and copies it as 16 bytes, a
// load the processor cannot forward from the narrower stores that built it
// (that stall was about a fifth of ValidateTokens' time). The slot is not
// cleared first: every field is written (the padding is never read).
func push(toks []Token, off, end int, next uint32, kind TokenKind, esc bool) []Token {
	n := len(toks)
	if n < cap(toks) {
		toks = toks[:n+1]
	} else {
		toks = append(toks, Token{})
	}
	t := &toks[n]
	t.Off, t.End, t.Next, t.Kind, t.Escaped = uint32(off), uint32(end), next, kind, esc
	return toks
}

// member reads `"key" :` and the space after it; i is at the key. It
// returns the end of the key and the index of the value.
func member(data []byte, i int, bad docFlags) (keyEnd, next int, _ docFlags, _ *Error) {
	if i >= len(data) || data[i] != '"' {
		if i >= len(data) {
			return 0, i, bad, syntaxError(i, "unexpected end of input")
		}
		return 0, i, bad, syntaxError(i, "unexpected "+quoteByte(data[i])+" where an object key belongs")
	}
	keyEnd, bad, err := scanString(data, i, bad)
	if err != nil {
		return 0, keyEnd, bad, err
	}
	i = SkipSpace(data, keyEnd)
	if i >= len(data) || data[i] != ':' {
		return keyEnd, i, bad, syntaxError(i, "missing ':' after an object key")
	}
	return keyEnd, SkipSpace(data, i+1), bad, nil
}

// ShortString is the usual case of Validate's string scan, small enough to
// inline: x holds the eight bytes after an opening quote (little endian);
// when the closing quote is among them and every byte before it is
// printable ASCII but a backslash, it returns the string's length with its
// quotes (a string Validate takes, without escape, valid UTF-8), else 0 (the
// string is ScanString's).
func ShortString(x uint64) int {
	m := specialBytes(x)
	// The lowest byte of m is exact, and so is a quote there in
	// quoteBytes (no borrow from below it).
	if m&-m&quoteBytes(x) == 0 {
		return 0
	}
	// m is not 0 here; the high bit set tells the compiler so (its
	// trailing zeros then need no test for 0), and moves no lower bit.
	return bits.TrailingZeros64(m|1<<63)>>3 + 2
}

// ShortNumber is the usual case of Validate's number scan, small enough to
// inline: x holds the eight bytes at a value (little endian); when they
// start with an integer of at most six digits (no sign) that no fraction or
// exponent follows, it returns its length, else 0 (the number is
// ScanNumber's). A leading zero is the caller's to refuse.
func ShortNumber(x uint64) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	// other marks the bytes below '0' (the borrow), above '9' (the carry
	// into the high bit) and non-ASCII, cont the '.', 'e' and 'E': both
	// exactly at the first byte after the digits (digits borrow and carry
	// nothing). The last byte counts as both, so that a number reaching
	// it is scanNumber's.
	other := ((x-lo*'0')&^x|(x+lo*(0x80-'9'-1))|x)&hi | 1<<63
	d, e := x^lo*'.', x|lo*0x20^lo*'e'
	cont := ((d-lo)&^d|(e-lo)&^e)&hi | 1<<63
	if other&-other&cont != 0 {
		return 0
	}
	return bits.TrailingZeros64(other) >> 3 // 0 for no digit
}

// scanString returns the index just past the string at data[i] and bad
// with what it noticed in the string added.
func scanString(data []byte, i int, bad docFlags) (int, docFlags, *Error) {
	j := i + 1
	last := len(data) - 8 // the last index a word may be read at
	for j < len(data) {
		// Eight bytes at a time, to the first that needs attention, a
		// closing quote there told from the word itself (not by loading
		// the byte found); the last few byte by byte. The words are
		// read unchecked: 0 < j <= last.
		for j <= last {
			x := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), j))[:])
			if m := specialBytes(x); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				// The lowest byte of m is exact, and so is a quote
				// there in quoteBytes (no borrow from below it).
				low := m & -m
				if low&quoteBytes(x) != 0 {
					return j + 1, bad, nil
				}
				// The usual escapes, of a quote, a slash or a
				// backslash, without leaving the loop.
				if low&backslashBytes(x) != 0 && j+1 < len(data) {
					if e := data[j+1]; e == '"' || e == '/' || e == '\\' {
						bad |= escaped
						j += 2
						continue
					}
				}
				break
			}
			j += 8
		}
		if j+8 > len(data) {
			for j < len(data) && plainString[data[j]] {
				j++
			}
			if j >= len(data) {
				break
			}
		}
		switch c := data[j]; {
		case c == '"':
			return j + 1, bad, nil
		case c == '\\':
			bad |= escaped
			if j+1 >= len(data) {
				return j, bad, syntaxError(j, "unexpected end of input")
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				r := Hex4(data, j+2)
				if r < 0 {
					return j, bad, syntaxError(j, `invalid \u escape`)
				}
				if r >= 0xd800 && r <= 0xdfff {
					bad |= surrogate
				}
				j += 6
			default:
				return j, bad, syntaxError(j, "invalid escape "+quoteByte(data[j+1]))
			}
		case c < 0x20:
			return j, bad, syntaxError(j, "control character in a string")
		default:
			r, w := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && w == 1 {
				bad |= badUTF8
			}
			j += w
		}
	}
	return j, bad, syntaxError(j, "unexpected end of input in a string")
}

// specialBytes sets the high bit of each of the eight bytes of x (little
// endian) that a string scan must look at, a quote, a backslash, a control
// character or a non-ASCII byte, exactly for the lowest such byte (SWAR: a
// byte below n sets its high bit in (x - n) &^ x; the borrow may also mark
// bytes above the first).
func specialBytes(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	// A control character's byte minus 0x20 has the high bit when no
	// byte below it borrows, and a non-ASCII byte has it already.
	return ((q-lo)&^q | (b-lo)&^b | (x - lo*0x20) | x) & hi
}

// quoteBytes sets the high bit of the bytes of x that are a quote, exactly
// for the lowest one (the borrow may also mark bytes above it).
func quoteBytes(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	return (q - lo) &^ q & hi
}

func literal(data []byte, i int, word string) (int, *Error) {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return i, syntaxError(i, "unexpected "+quoteByte(data[i])+" where a value belongs")
	}
	return i + len(word), nil
}

// maxPlainDigits is the most integer digits a number without an exponent
// may have and certainly not overflow float64 (10^308 < MaxFloat64).
const maxPlainDigits = 308

func scanNumber(data []byte, i int) (int, *Error) {
	start, j := i, i
	if data[j] == '-' {
		j++
	}
	intDigits := 1
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && '1' <= data[j] && data[j] <= '9':
		k := j
		j = skipDigits(data, j)
		intDigits = j - k
	case j >= len(data):
		return j, syntaxError(j, "unexpected end of input in a number")
	default:
		return j, syntaxError(j, "unexpected "+quoteByte(data[j])+" where a value belongs")
	}
	if j < len(data) && data[j] == '.' {
		k := j + 1
		if j = skipDigits(data, k); j == k {
			return j, syntaxError(j, "a fraction needs a digit")
		}
	}
	exp := false
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		exp = true
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		k := j
		if j = skipDigits(data, k); j == k {
			return j, syntaxError(j, "an exponent needs a digit")
		}
	}
	if exp || intDigits > maxPlainDigits {
		if _, err := strconv.ParseFloat(unsafeString(data[start:j]), 64); err != nil {
			return j, &Error{Err: ErrRange, Offset: start, Detail: clip(data[start:j])}
		}
	}
	return j, nil
}

func skipDigits(data []byte, j int) int {
	for j < len(data) && '0' <= data[j] && data[j] <= '9' {
		j++
	}
	return j
}

func syntaxError(off int, detail string) *Error {
	return &Error{Err: ErrSyntax, Offset: off, Detail: detail}
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// clip shortens a number for an error message.
func clip(b []byte) string {
	const most = 32
	if len(b) > most {
		return string(b[:most]) + "..."
	}
	return string(b)
}
