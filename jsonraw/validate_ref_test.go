package jsonraw

// The validating pass as it was before the open container's kind was kept
// in a variable, the white space after a value was told by one comparison
// and the string scan read its words unchecked: the reference the differential tests hold validate to
// (TestValidateAgreesWithBefore, FuzzValidateAgreesWithBefore).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// refSkipSpace is SkipSpace as it was, by table.
func refSkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace[b[i]] {
		i++
	}
	return i
}

// refValidate is validate as it was: Validate, and ValidateTokens when
// rec is set. It appends the tokens to toks, a local slice rather than the
// caller's (appending then costs no load and store through a pointer), and
// returns it.
//
// While an object or array is open its opener's Next holds the enclosing
// opener's index (noOpen at the top): the open containers form a chain and
// need no stack.
func refValidate(data []byte, toks []Token, rec bool) ([]Token, Doc, error) {
	i := refSkipSpace(data, 0)
	if i == len(data) {
		return toks, Doc{}, &Error{Err: ErrEmpty}
	}
	var objects [MaxDepth/64 + 1]uint64 // bit d: the container at depth d is an object
	depth := 0
	cur := noOpen  // the innermost open container's token
	inKey := false // an object's member is next, not a value
	var bad docFlags
value:
	for {
		if inKey {
			inKey = false
			// `"key":` and the space after it; the usual key without a
			// call (member has the whole rule).
			start, end := i, 0
			var err *Error
			if i <= len(data)-9 && data[i] == '"' {
				if n := ShortString(binary.LittleEndian.Uint64(data[i+1:])); n != 0 {
					end = i + n
				}
			}
			if end != 0 && end < len(data) && data[end] == ':' {
				i = refSkipSpace(data, end+1)
			} else if end, i, bad, err = refMember(data, i, bad); err != nil {
				return toks, Doc{}, err
			}
			if rec {
				toks = refPush(toks, start, end, 0, TokKey, bad&escaped != 0)
			}
			bad &^= escaped
		}
		if i >= len(data) {
			return toks, Doc{}, syntaxError(i, "unexpected end of input")
		}
		start, kind := i, TokScalar // kind 0: nothing left to record
		switch c := data[i]; c {
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
				toks = refPush(toks, i, 0, uint32(int32(cur)), opener, false)
				cur = len(toks) - 1
			}
			depth++
			i = refSkipSpace(data, i+1)
			if i >= len(data) || data[i] != closer {
				inKey = c == '{'
				continue value
			}
			if rec {
				toks, cur = refCloseAt(toks, i, cur)
			}
			depth--
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
				if i, bad, err = refScanString(data, i, bad); err != nil {
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
			toks = refPush(toks, start, i, 0, kind, bad&escaped != 0)
		}
		bad &^= escaped
		// After a value: close containers, or find the next one.
		for {
			i = refSkipSpace(data, i)
			if depth == 0 {
				if i != len(data) {
					return toks, Doc{}, syntaxError(i, "data after the top-level value")
				}
				return toks, Doc{flags: bad}, nil
			}
			if i >= len(data) {
				return toks, Doc{}, syntaxError(i, "unexpected end of input")
			}
			d := depth - 1
			inObject := objects[d>>6]&(1<<(d&63)) != 0
			switch c := data[i]; {
			case c == ',':
				i = refSkipSpace(data, i+1)
				inKey = inObject
				continue value
			case inObject && c == '}', !inObject && c == ']':
				if rec {
					toks, cur = refCloseAt(toks, i, cur)
				}
				depth--
				i++
			default:
				return toks, Doc{}, syntaxError(i, "unexpected "+quoteByte(c)+" after a value")
			}
		}
	}
}

// refCloseAt appends the closer at off of the opener cur, sets the opener's End
// and Next, and returns the enclosing opener.
func refCloseAt(toks []Token, off, cur int) ([]Token, int) {
	toks = refPush(toks, off, off+1, 0, TokClose, false)
	t := &toks[cur]
	parent := int(int32(t.Next))
	t.End, t.Next = uint32(off+1), uint32(len(toks))
	return toks, parent
}

// refPush appends a token, its fields written in place: appending the token as
// a composite literal builds it on the stack and copies it as 16 bytes, a
// load the processor cannot forward from the narrower stores that built it
// (that stall was about a fifth of ValidateTokens' time).
func refPush(toks []Token, off, end int, next uint32, kind TokenKind, esc bool) []Token {
	toks = append(toks, Token{})
	t := &toks[len(toks)-1]
	t.Off, t.End, t.Next, t.Kind, t.Escaped = uint32(off), uint32(end), next, kind, esc
	return toks
}

// refMember reads `"key" :` and the space after it; i is at the key. It
// returns the end of the key and the index of the value.
func refMember(data []byte, i int, bad docFlags) (keyEnd, next int, _ docFlags, _ *Error) {
	if i >= len(data) || data[i] != '"' {
		if i >= len(data) {
			return 0, i, bad, syntaxError(i, "unexpected end of input")
		}
		return 0, i, bad, syntaxError(i, "unexpected "+quoteByte(data[i])+" where an object key belongs")
	}
	keyEnd, bad, err := refScanString(data, i, bad)
	if err != nil {
		return 0, keyEnd, bad, err
	}
	i = refSkipSpace(data, keyEnd)
	if i >= len(data) || data[i] != ':' {
		return keyEnd, i, bad, syntaxError(i, "missing ':' after an object key")
	}
	return keyEnd, refSkipSpace(data, i+1), bad, nil
}

// refScanString is scanString as it was: it returns the index just past
// the string at data[i] and bad with what it noticed in the string added.
func refScanString(data []byte, i int, bad docFlags) (int, docFlags, *Error) {
	j := i + 1
	for j < len(data) {
		// Eight bytes at a time, to the first that needs attention, a
		// closing quote there told from the word itself (not by loading
		// the byte found); the last few byte by byte.
		for j <= len(data)-8 {
			x := binary.LittleEndian.Uint64(data[j:])
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

// checkValidateAgrees compares validate with refValidate on data: the
// tokens (into an empty and into a used buffer), the Doc and the error.
func checkValidateAgrees(t *testing.T, data []byte) {
	t.Helper()
	for _, rec := range []bool{false, true} {
		want, wdoc, werr := refValidate(data, nil, rec)
		got, doc, err := validate(data, nil, rec)
		require.Equal(t, want, got, "%q rec=%v", data, rec)
		require.Equal(t, wdoc, doc, "%q rec=%v", data, rec)
		require.Equal(t, werr, err, "%q rec=%v", data, rec)
		// Into a used buffer, three tokens in it and stale ones beyond.
		used := func() []Token {
			b := make([]Token, len(want)+8)
			for k := range b {
				b[k] = Token{Off: 7, End: 9, Next: 11, Kind: TokScalar, Escaped: true}
			}
			return b[:3]
		}
		want, _, _ = refValidate(data, used(), rec)
		got, _, _ = validate(data, used(), rec)
		require.Equal(t, want, got, "%q rec=%v, into a used buffer", data, rec)
	}
}

// TestValidateAgreesWithBefore: validate gives the tokens, Doc and error
// it gave before on typical documents, indented and compact, and on
// each of them cut short or with one byte replaced, at every offset.
func TestValidateAgreesWithBefore(t *testing.T) {
	for _, name := range []string{"response", "request-compact", "response-compact"} {
		data := typical(t, name)
		checkValidateAgrees(t, data)
		for i := range len(data) {
			checkValidateAgrees(t, data[:i])
			for _, c := range []byte(" \n,:}]{[\"\\0x") {
				mut := bytes.Clone(data)
				mut[i] = c
				checkValidateAgrees(t, mut)
			}
		}
	}
	for _, indent := range []string{" ", "\t", " \r\n\t ", ""} {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, typical(t, "response-compact"), indent, indent))
		checkValidateAgrees(t, buf.Bytes())
	}
	checkValidateAgrees(t, []byte("{ \"a\" : 1 , \"b\"\t:\n[ 1 , 2 ] ,\r\"c\":  {\"d\":\"e\"  }\t}"))
	checkValidateAgrees(t, []byte("{\"a\":"))
	checkValidateAgrees(t, []byte("{\"a\": "))
	checkValidateAgrees(t, []byte("{\"a\":  "))
	checkValidateAgrees(t, []byte("[1, "))
	checkValidateAgrees(t, []byte("{\"a\":1, "))
	deep := strings.Repeat(`{"a":[`, MaxDepth/2) + "1" + strings.Repeat(`]}`, MaxDepth/2)
	checkValidateAgrees(t, []byte(deep))
	checkValidateAgrees(t, []byte("["+deep+"]"))
	checkValidateAgrees(t, []byte(`[`+strings.Repeat(`{"a":[{}, [ ] ,{ "b" : { } } ]} ,`, 70)+`0 ]`))
}

// FuzzValidateAgreesWithBefore: on any bytes, validate gives the tokens,
// Doc and error it gave before.
func FuzzValidateAgreesWithBefore(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[]`, `1e400`, `-0.0e-0`, `"\ud800"`,
		"\"\xff\"", `{"a":1}x`, `[[[]]]`, `{"":""}`, ` true `, `{"a":"\\\""}`, "[ {} , [ ] ,{\"a\" :\t{ }\n} ]", `{"a":[}`, `[{"a":1]`} {
		f.Add([]byte(s))
	}
	f.Add(typical(f, "response"))
	f.Add(typical(f, "request-compact"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkValidateAgrees(t, data)
	})
}
