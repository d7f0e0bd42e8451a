package rtb

import "encoding/binary"

// The exchange listener's framing check (RFC 9112). fasthttp frames a
// request by Transfer-Encoding when Content-Length is present too, reads a
// bare LF as a line end, joins obs-fold lines and takes CHUNKED for chunked:
// where a proxy in front frames the same bytes another way, the bytes after
// the first request reach the bidder as a second, smuggled request. framer
// scans every byte the exchange sends, before fasthttp reads it, against a
// strict grammar under which every framing is unambiguous:
//
//   - every line of the head (request line, header fields, trailer fields,
//     chunk-size lines) ends in CRLF: a bare LF or a bare CR is an error;
//   - a field line starts with a token character (no obs-fold, no leading
//     whitespace) and its name is a token directly followed by ':';
//   - at most one Content-Length, of 1 to 18 digits (OWS around it allowed);
//   - at most one Transfer-Encoding, whose value is exactly "chunked" (any
//     case), and never beside a Content-Length;
//   - chunk sizes are 1 to 8 hex digits, directly followed by CRLF or by a
//     chunk extension (";" up to CRLF); chunk data is followed by CRLF.
//
// The connection hands fasthttp only the bytes before the first error and
// then fails its next read with a *framingError: fasthttp never sees a
// complete request the framer rejected, the requests before it are served,
// and the one at fault is answered 400 and the connection closed (fasthttp
// closes a connection after a read error). Requests the framer accepts are
// framed the same way by fasthttp, so the framer's count of request starts
// is fasthttp's count of requests, which connArrival relies on.
//
// Leading CRLFs before a request line are skipped as fasthttp skips them
// (RFC 9112 §2.2). Sizes of the head and of the body are fasthttp's to
// bound (431, 413): the framer keeps constant state whatever it reads.

// framingError is a request the framer refused; reason is fixed text.
type framingError struct{ reason string }

func (e *framingError) Error() string { return "bad request framing: " + e.reason }

// Framing errors: the reasons are the 400 answer's text.
var (
	errBareLF        = &framingError{"bare LF (lines end in CRLF)"}
	errBareCR        = &framingError{"bare CR (lines end in CRLF)"}
	errObsFold       = &framingError{"obs-fold or whitespace at the start of a header line"}
	errFieldName     = &framingError{"invalid header field name"}
	errDupLength     = &framingError{"Content-Length more than once"}
	errBadLength     = &framingError{"invalid Content-Length"}
	errDupTE         = &framingError{"Transfer-Encoding more than once"}
	errBadTE         = &framingError{"unsupported Transfer-Encoding (only chunked)"}
	errLengthAndTE   = &framingError{"both Content-Length and Transfer-Encoding"}
	errBadChunkSize  = &framingError{"invalid chunk size"}
	errBadChunkFrame = &framingError{"chunk data not followed by CRLF"}
)

type fstate uint8

const (
	fStart        fstate = iota // before a request: CRLFs or the request line's first byte
	fStartCR                    // after a CR before the request line
	fReqLine                    // in the request line
	fReqLineCR                  // after the request line's CR
	fLineStart                  // at the start of a field line or of the empty line
	fName                       // in a field name
	fValue                      // in a field value
	fValueCR                    // after a field line's CR
	fEndCR                      // after the empty line's CR
	fBody                       // in a Content-Length body
	fChunkSize                  // in a chunk size
	fChunkExt                   // in a chunk extension
	fChunkSizeCR                // after a chunk-size line's CR
	fChunkData                  // in chunk data
	fChunkDataCR                // expecting the CR after chunk data
	fChunkDataLF                // expecting the LF after chunk data
	fTrailerStart               // at the start of a trailer line or of the empty line
	fTrailer                    // in a trailer line
	fTrailerCR                  // after a trailer line's CR
	fTrailerEndCR               // after the trailer section's empty line's CR
)

// crState is the state after a CR in the lines of free text.
var crState = [...]fstate{fReqLine: fReqLineCR, fChunkExt: fChunkSizeCR, fTrailer: fTrailerCR}

type fieldKind uint8

const (
	fieldOther fieldKind = iota
	fieldLength
	fieldTE
)

// framer is the incremental scanner of one connection's request stream. Its
// state is a few words: nothing is buffered or allocated.
type framer struct {
	st        fstate
	field     fieldKind
	hasLength bool
	hasTE     bool
	nameLen   int
	name      [len("transfer-encoding")]byte // lower-cased, while it may still name a framing field
	val       [24]byte                       // a framing field's value, OWS trimmed at the end
	valLen    int
	valLong   bool
	remain    int64  // bytes left in a body or chunk
	digits    int    // of the chunk size
	requests  uint64 // request starts seen
	err       *framingError
}

var (
	nameLength = []byte("content-length")
	nameTE     = []byte("transfer-encoding")
	valChunked = []byte("chunked")
)

// scan advances over p. It returns how many leading bytes of p may be handed
// on (all of p, or the bytes before the first error), the number of request
// starts among them, and the error, which stays latched.
func (f *framer) scan(p []byte) (ok int, starts int, err *framingError) {
	if f.err != nil {
		return 0, 0, f.err
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch f.st {
		case fBody, fChunkData:
			// Body bytes are skipped whole, up to what the framing says.
			n := min(int64(len(p)-i), f.remain)
			f.remain -= n
			i += int(n) - 1
			if f.remain == 0 {
				if f.st == fBody {
					f.st = fStart
				} else {
					f.st = fChunkDataCR
				}
			}
		case fStart:
			switch c {
			case '\r':
				f.st = fStartCR
			case '\n':
				return f.fail(i, starts, errBareLF)
			default:
				starts++
				f.requests++
				f.hasLength, f.hasTE = false, false
				f.st = fReqLine
			}
		case fStartCR, fReqLineCR, fValueCR, fChunkSizeCR, fTrailerCR, fEndCR, fTrailerEndCR:
			if c != '\n' {
				return f.fail(i, starts, errBareCR)
			}
			if e := f.lineEnd(); e != nil {
				return f.fail(i, starts, e)
			}
		case fReqLine, fChunkExt, fTrailer:
			// Free text up to the line's end is skipped whole.
			if i = textEnd(p, i); i == len(p) {
				return len(p), starts, nil
			}
			if p[i] == '\n' {
				return f.fail(i, starts, errBareLF)
			}
			f.st = crState[f.st]
		case fLineStart:
			switch {
			case c == '\r':
				f.st = fEndCR
				continue
			case c == '\n':
				return f.fail(i, starts, errBareLF)
			case c == ' ' || c == '\t':
				return f.fail(i, starts, errObsFold)
			case !tchar[c]:
				return f.fail(i, starts, errFieldName)
			}
			// A field name starts here: read on in fName's loop.
			f.st = fName
			f.nameLen = 0
			fallthrough
		case fName:
			// The name's token characters are found in a loop of their
			// own, then its first bytes kept as addName keeps them.
			j := i
			for j < len(p) && tchar[p[j]] {
				j++
			}
			whole := f.nameLen == 0 && j < len(p) // the name is p[i:j]
			if !whole {
				k := f.nameLen
				for _, c := range p[i:j] {
					if k >= len(f.name) {
						break
					}
					f.name[k] = c | 0x20 // token characters: only letters change
					k++
				}
			}
			name := p[i:j]
			f.nameLen += j - i
			if i = j; i == len(p) {
				return len(p), starts, nil
			}
			if c = p[i]; c != ':' {
				return f.fail(i, starts, errFieldName)
			}
			if whole {
				// fieldKind without the copy: the same comparison of the
				// lower-cased bytes.
				f.field = fieldOther
				switch {
				case asciiEqualFold(name, nameLength):
					f.field = fieldLength
				case asciiEqualFold(name, nameTE):
					f.field = fieldTE
				}
			} else {
				f.field = f.fieldKind()
			}
			f.valLen, f.valLong = 0, false
			f.st = fValue
		case fValue:
			if f.field == fieldOther {
				// Only a framing field's value is kept: another one is
				// skipped whole up to the line's end.
				if i = textEnd(p, i); i == len(p) {
					return len(p), starts, nil
				}
				c = p[i]
			}
			switch c {
			case '\r':
				if f.field == fieldOther && i+1 < len(p) && p[i+1] == '\n' {
					// The line's CRLF at once: what lineEnd and fieldEnd
					// do for a field that is not a framing one (the fields
					// before it left no error, so the framing is still
					// consistent).
					i++
					f.st = fLineStart
					continue
				}
				f.st = fValueCR
			case '\n':
				return f.fail(i, starts, errBareLF)
			default:
				f.addValue(c)
			}
		case fChunkSize:
			switch h := unhex(c); {
			case h >= 0:
				if f.digits == 8 {
					return f.fail(i, starts, errBadChunkSize)
				}
				f.digits++
				f.remain = f.remain<<4 | int64(h)
			case f.digits == 0:
				return f.fail(i, starts, errBadChunkSize)
			case c == ';':
				f.st = fChunkExt
			case c == '\r':
				f.st = fChunkSizeCR
			default:
				return f.fail(i, starts, errBadChunkSize)
			}
		case fChunkDataCR:
			if c != '\r' {
				return f.fail(i, starts, errBadChunkFrame)
			}
			f.st = fChunkDataLF
		case fChunkDataLF:
			if c != '\n' {
				return f.fail(i, starts, errBadChunkFrame)
			}
			f.chunkStart()
		case fTrailerStart:
			switch c {
			case '\r':
				f.st = fTrailerEndCR
			case '\n':
				return f.fail(i, starts, errBareLF)
			case ' ', '\t':
				return f.fail(i, starts, errObsFold)
			default:
				f.st = fTrailer
			}
		}
	}
	return len(p), starts, nil
}

func (f *framer) fail(i, starts int, e *framingError) (int, int, *framingError) {
	f.err = e
	return i, starts, e
}

// lineEnd handles the LF that ends a line in one of the ...CR states.
func (f *framer) lineEnd() *framingError {
	switch f.st {
	case fStartCR:
		f.st = fStart
	case fReqLineCR:
		f.st = fLineStart
	case fTrailerCR:
		f.st = fTrailerStart
	case fValueCR:
		f.st = fLineStart
		return f.fieldEnd()
	case fEndCR:
		return f.headEnd()
	case fChunkSizeCR:
		if f.remain == 0 {
			f.st = fTrailerStart
		} else {
			f.st = fChunkData
		}
	case fTrailerEndCR:
		f.st = fStart
	}
	return nil
}

// fieldEnd checks a complete Content-Length or Transfer-Encoding field.
func (f *framer) fieldEnd() *framingError {
	v := f.val[:f.valLen]
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	switch f.field {
	case fieldLength:
		if f.hasLength {
			return errDupLength
		}
		f.hasLength = true
		if f.valLong || len(v) == 0 || len(v) > 18 {
			return errBadLength
		}
		var n int64
		for _, c := range v {
			if c < '0' || c > '9' {
				return errBadLength
			}
			n = n*10 + int64(c-'0')
		}
		f.remain = n
	case fieldTE:
		if f.hasTE {
			return errDupTE
		}
		f.hasTE = true
		if f.valLong || !asciiEqualFold(v, valChunked) {
			return errBadTE
		}
	}
	if f.hasLength && f.hasTE {
		return errLengthAndTE
	}
	return nil
}

// headEnd picks the body's framing once the head is complete.
func (f *framer) headEnd() *framingError {
	switch {
	case f.hasTE:
		f.chunkStart()
	case f.hasLength && f.remain > 0:
		f.st = fBody
	default:
		f.remain = 0
		f.st = fStart
	}
	return nil
}

func (f *framer) chunkStart() {
	f.st = fChunkSize
	f.digits = 0
	f.remain = 0
}

func (f *framer) addName(c byte) {
	if f.nameLen < len(f.name) {
		f.name[f.nameLen] = c | 0x20 // token characters: only letters change
	}
	f.nameLen++
}

func (f *framer) fieldKind() fieldKind {
	n := f.name[:min(f.nameLen, len(f.name))]
	switch {
	case f.nameLen == len(nameLength) && string(n) == string(nameLength):
		return fieldLength
	case f.nameLen == len(nameTE) && string(n) == string(nameTE):
		return fieldTE
	}
	return fieldOther
}

// addValue collects a framing field's value without its leading OWS.
func (f *framer) addValue(c byte) {
	if f.valLen == 0 && (c == ' ' || c == '\t') {
		return
	}
	if f.valLen == len(f.val) {
		f.valLong = true
		return
	}
	f.val[f.valLen] = c
	f.valLen++
}

func asciiEqualFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i]|0x20 != b[i] {
			return false
		}
	}
	return true
}

// textEnd returns the index of the first CR or LF in p from i on, or
// len(p): the end of a line's text. Eight bytes a step while none of them
// is under 0x0e ((w - 0x0e…) &^ w sets a byte's high bit in a word holding
// such a byte, and in no other word); a word that holds one, and the last
// bytes, one comparison a byte for the usual text (every byte above CR).
func textEnd(p []byte, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for i <= len(p)-8 {
		if w := binary.LittleEndian.Uint64(p[i:]); (w-lo*0x0e)&^w&hi == 0 {
			i += 8
			continue
		}
		for end := i + 8; i < end; i++ {
			if c := p[i]; c <= '\r' && (c == '\r' || c == '\n') {
				return i
			}
		}
	}
	for ; i < len(p); i++ {
		if c := p[i]; c <= '\r' && (c == '\r' || c == '\n') {
			return i
		}
	}
	return i
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
