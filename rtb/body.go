package rtb

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/bidguard/bidguard/jsonraw"
)

// appendTmax appends to dst the JSON object body with every top-level member
// whose key encoding/json would match to "tmax" (case folded, after
// unescaping: jsonraw.KeyIs) removed, and "tmax":ms written as the first
// member. Every other member is copied byte for byte, so the bidder sees the
// exchange's request unchanged but for tmax, and any parser (first-wins,
// last-wins, case sensitive or not) reads exactly one tmax. It allocates
// nothing once dst has the room.
//
// body must be a document jsonraw.Validate accepted (the request decoded);
// ok is false when it is not an object (the caller then re-marshals the
// decoded request), and dst is then returned unchanged. When rec holds the
// members peekTmax recorded from body, body is not read again.
func appendTmax(dst, body []byte, ms int64, rec *members) (out []byte, ok bool) {
	if rec != nil && rec.ok {
		dst = append(dst, `{"tmax":`...)
		dst = strconv.AppendInt(dst, ms, 10)
		spans := rec.spans[:rec.n]
		for i := 0; i < len(spans); i++ {
			if spans[i].tmax {
				continue
			}
			// Kept members the body separates by a bare comma are copied
			// in one append with their commas: the bytes that copying them
			// one by one, each after a comma, would write.
			s, e := spans[i].s, spans[i].e
			for i+1 < len(spans) && !spans[i+1].tmax && spans[i+1].s == e+1 && body[e] == ',' {
				i++
				e = spans[i].e
			}
			dst = append(dst, ',')
			dst = append(dst, body[s:e]...)
		}
		return append(dst, '}'), true
	}
	m, isObj := jsonraw.Object(body)
	if !isObj {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, `{"tmax":`...)
	dst = strconv.AppendInt(dst, ms, 10)
	for {
		k, _, more := m.Next()
		if !more {
			break
		}
		if jsonraw.KeyIs(k, "tmax") {
			continue
		}
		s, e := m.Span()
		dst = append(dst, ',')
		dst = append(dst, body[s:e]...)
	}
	if !m.Complete() {
		return dst[:start], false
	}
	return append(dst, '}'), true
}

// maxMembers is the most top-level members a members records: a bid
// request has about 25 fields.
const maxMembers = 32

// members are the top-level members of a request body as peekTmax read
// them (ok: all of them, a well-formed object), so that appendTmax need not
// read the body again.
type members struct {
	ok    bool
	n     int
	spans [maxMembers]struct {
		s, e int32
		tmax bool
	}
}

var (
	errTooLarge   = errors.New("body over the size limit")
	errDecompress = errors.New("bad gzip data")
)

type gunzipper struct {
	br bytes.Reader
	zr gzip.Reader
}

var gunzippers sync.Pool

// gunzip appends the decompressed src to dst, reading at most limit bytes:
// errTooLarge when the output would exceed limit (a gzip bomb stops there),
// errDecompress when src is not valid gzip.
func gunzip(dst, src []byte, limit int) ([]byte, error) {
	g, _ := gunzippers.Get().(*gunzipper)
	if g == nil {
		g = new(gunzipper)
	}
	defer gunzippers.Put(g)
	g.br.Reset(src)
	if err := g.zr.Reset(&g.br); err != nil {
		return dst, errDecompress
	}
	base := len(dst)
	for {
		if len(dst) == cap(dst) {
			if len(dst)-base > limit {
				return dst, errTooLarge
			}
			dst = append(dst, 0)[:len(dst)]
		}
		room := cap(dst) - len(dst)
		if over := base + limit + 1 - len(dst); room > over {
			room = over
		}
		n, rerr := g.zr.Read(dst[len(dst) : len(dst)+room])
		dst = dst[:len(dst)+n]
		if len(dst)-base > limit {
			return dst, errTooLarge
		}
		if errors.Is(rerr, io.EOF) {
			return dst, nil
		}
		if rerr != nil {
			return dst, errDecompress
		}
	}
}

// isJSONType reports whether a Content-Type value is application/json,
// parameters allowed (media types are case-insensitive).
func isJSONType(ct []byte) bool {
	if string(ct) == "application/json" { // as exchanges send it
		return true
	}
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), []byte("application/json"))
}

// isIdentity reports whether a Content-Encoding value means no encoding.
func isIdentity(ce []byte) bool {
	ce = bytes.TrimSpace(ce)
	return len(ce) == 0 || bytes.EqualFold(ce, []byte("identity"))
}

func isGzip(ce []byte) bool {
	ce = bytes.TrimSpace(ce)
	return bytes.EqualFold(ce, []byte("gzip")) || bytes.EqualFold(ce, []byte("x-gzip"))
}

// safeJSONType returns the bidder's Content-Type when it is
// application/json with at most a utf-8 charset (the only header forwarded
// from the bidder, so never arbitrary bidder text), else application/json.
func safeJSONType(ct []byte) []byte {
	switch string(ct) { // as bidders send it
	case "application/json":
		return jsonType
	case "application/json; charset=utf-8":
		return jsonTypeUTF8
	}
	ct = bytes.TrimSpace(ct)
	typ, params, _ := bytes.Cut(ct, []byte(";"))
	if !bytes.EqualFold(bytes.TrimSpace(typ), []byte("application/json")) {
		return jsonType
	}
	params = bytes.TrimSpace(params)
	if len(params) == 0 {
		return jsonType
	}
	k, v, _ := bytes.Cut(params, []byte("="))
	if bytes.EqualFold(bytes.TrimSpace(k), []byte("charset")) {
		v = bytes.Trim(bytes.TrimSpace(v), `"`)
		if bytes.EqualFold(v, []byte("utf-8")) {
			return jsonTypeUTF8
		}
	}
	return jsonType
}

var (
	jsonType     = []byte("application/json")
	jsonTypeUTF8 = []byte("application/json; charset=utf-8")
)
