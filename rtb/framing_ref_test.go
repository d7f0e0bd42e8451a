package rtb

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanRef is the framer's byte-at-a-time scan as it was before the fast
// paths of scan, kept as the reference scan must agree with on every input
// and every split into reads (TestFramerFastPaths, FuzzFramerDifferential).
// It advances over p. It returns how many leading bytes of p may be handed
// on (all of p, or the bytes before the first error), the number of request
// starts among them, and the error, which stays latched.
func (f *framer) scanRef(p []byte) (ok int, starts int, err *framingError) {
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
			switch c {
			case '\r':
				f.st = crState[f.st]
			case '\n':
				return f.fail(i, starts, errBareLF)
			}
		case fLineStart:
			switch {
			case c == '\r':
				f.st = fEndCR
			case c == '\n':
				return f.fail(i, starts, errBareLF)
			case c == ' ' || c == '\t':
				return f.fail(i, starts, errObsFold)
			case !refTokenChar(c):
				return f.fail(i, starts, errFieldName)
			default:
				f.st = fName
				f.nameLen = 0
				f.addName(c)
			}
		case fName:
			switch {
			case c == ':':
				f.field = f.fieldKind()
				f.valLen, f.valLong = 0, false
				f.st = fValue
			case refTokenChar(c):
				f.addName(c)
			default:
				return f.fail(i, starts, errFieldName)
			}
		case fValue:
			switch c {
			case '\r':
				f.st = fValueCR
			case '\n':
				return f.fail(i, starts, errBareLF)
			default:
				if f.field != fieldOther {
					f.addValue(c)
				}
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

// refTokenChar is the framer's tchar test before it read the tchar table.
func refTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// sameScan runs scan and scanRef over in, cut into reads of chunk bytes
// (chunk <= 0: one read), and fails at the first read after which their
// results or their states differ.
func sameScan(t testing.TB, in []byte, chunk int) {
	var fast, ref framer
	for off := 0; off < len(in); {
		end := len(in)
		if chunk > 0 {
			end = min(off+chunk, len(in))
		}
		ok, starts, err := fast.scan(in[off:end])
		rok, rstarts, rerr := ref.scanRef(in[off:end])
		if ok != rok || starts != rstarts || err != rerr || liveState(fast) != liveState(ref) {
			t.Fatalf("%q in reads of %d, bytes %d to %d: scan (%d, %d, %v) state %+v; scanRef (%d, %d, %v) state %+v",
				in, chunk, off, end, ok, starts, err, fast, rok, rstarts, rerr, ref)
		}
		if err != nil {
			return
		}
		off = end
	}
}

// liveState is f without the bytes of f.name that scan no longer reads: all
// of them but while a name split across reads is being read (fName, no
// error latched), and those past the name's length then. scan reads a name
// that is whole in one read where it is and leaves f.name as it was.
func liveState(f framer) framer {
	n := 0
	if f.st == fName && f.err == nil {
		n = min(f.nameLen, len(f.name))
	}
	clear(f.name[n:])
	return f
}

// TestFramerFastPaths: scan agrees with scanRef, its byte-at-a-time
// predecessor, on the seeds and the smuggling probes in every split into
// reads, and the tchar table is refTokenChar.
func TestFramerFastPaths(t *testing.T) {
	for c := range 256 {
		require.Equal(t, refTokenChar(byte(c)), tchar[c], "byte %#x", c)
	}
	inputs := append([]string{}, framerSeeds...)
	for _, p := range smugglingProbes {
		inputs = append(inputs, p.req)
	}
	inputs = append(inputs,
		"POST /bid HTTP/1.1\r\nX-Very-Long-Header-Name-Beyond-Seventeen: v\r\nContent-Length: 2\r\n\r\n{}",
		"POST /bid HTTP/1.1\r\nContent-Length\r\n\r\n",
		"POST /bid HTTP/1.1\r\nHost: a\rb\r\n\r\n",
		"POST /bid HTTP/1.1\r\nHost: a\nb\r\n\r\n",
		"POST /b\x00id HTTP/1.1\r\nHost: \x01\x7f\xff\r\n\r\n",
		"POST /bid HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\nc\r\nabc\r\n0\r\nT: x\ny\r\n\r\n",
		"POST /bid HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer-Field: text of the trailer\r\n\r\n",
	)
	for _, in := range inputs {
		for chunk := 0; chunk <= len(in); chunk++ {
			sameScan(t, []byte(in), chunk)
		}
	}
}

// FuzzFramerDifferential: scan and scanRef agree on any bytes in any read
// size (go test -run '^$' -fuzz FuzzFramerDifferential ./rtb/).
func FuzzFramerDifferential(f *testing.F) {
	for _, s := range framerSeeds {
		f.Add([]byte(s), 0)
		f.Add([]byte(s), 5)
	}
	for _, p := range smugglingProbes {
		f.Add([]byte(p.req), 3)
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		sameScan(t, in, chunk)
	})
}

// BenchmarkFramerScan is the framer over a typical exchange request (head
// and a 1,000-byte body in one read), against scanRef.
func BenchmarkFramerScan(b *testing.B) {
	in := []byte("POST /bid HTTP/1.1\r\nHost: sidecar.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n" +
		"User-Agent: exchange/2.1\r\nX-Openrtb-Version: 2.6\r\nAccept-Encoding: gzip\r\n\r\n" + strings.Repeat("x", 1000))
	for _, v := range []struct {
		name string
		scan func(*framer, []byte) (int, int, *framingError)
	}{{"scan", (*framer).scan}, {"scanRef", (*framer).scanRef}} {
		b.Run(v.name, func(b *testing.B) {
			var f framer
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, _, err := v.scan(&f, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
