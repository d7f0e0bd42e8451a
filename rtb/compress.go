package rtb

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fasthttp"
)

// answerGzipLevel is the compression level of gzipped answers: the
// fastest, since the answer is on the auction's clock
// (BenchmarkGzipAnswer measures the cost per KB).
const answerGzipLevel = gzip.BestSpeed

// gzipWriters are reused gzip writers; each is Reset onto its output.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, answerGzipLevel) // a valid level: no error
	return w
}}

var strGzip = []byte("gzip")

// setAnswer sets the answer's body: gzip-compressed (Content-Encoding:
// gzip) when the upstream's compressAbove is set, the answer is longer
// and the exchange accepts gzip; as it is otherwise. It allocates nothing
// once the pooled writer and the response buffer have grown.
func (up *upstream) setAnswer(ctx *fasthttp.RequestCtx, answer []byte) {
	if up.compressAbove <= 0 || len(answer) <= up.compressAbove || !acceptsGzip(ctx.Request.Header.PeekCanonical(keyAcceptEncoding)) {
		ctx.SetBody(answer)
		return
	}
	ctx.Response.ResetBody()
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(ctx.Response.BodyWriter())
	_, err := zw.Write(answer)
	if err == nil {
		err = zw.Close()
	}
	gzipWriters.Put(zw)
	if err != nil { // not reached: the body buffer does not fail
		ctx.SetBody(answer)
		return
	}
	ctx.Response.Header.SetContentEncodingBytes(strGzip)
	up.fm.gzipped.Inc()
}

// acceptsGzip reports whether an Accept-Encoding value accepts gzip: gzip
// (or x-gzip) listed with a q-value above 0, or * above 0 with gzip not
// listed (RFC 9110 §12.5.3).
func acceptsGzip(ae []byte) bool {
	star, gz := 0, 0 // 0: not listed, 1: accepted, -1: refused (q=0)
	for len(ae) > 0 {
		var item []byte
		item, ae, _ = bytes.Cut(ae, []byte(","))
		coding, params, _ := bytes.Cut(item, []byte(";"))
		coding = bytes.TrimSpace(coding)
		v := 1
		if qZero(params) {
			v = -1
		}
		switch {
		case bytes.EqualFold(coding, strGzip), bytes.EqualFold(coding, []byte("x-gzip")):
			if gz == 0 || v < 0 {
				gz = v
			}
		case len(coding) == 1 && coding[0] == '*':
			star = v
		}
	}
	return gz > 0 || (gz == 0 && star > 0)
}

// qZero reports whether a coding's parameters give q=0 (0, 0., 0.0, 0.00,
// 0.000).
func qZero(params []byte) bool {
	for len(params) > 0 {
		var p []byte
		p, params, _ = bytes.Cut(params, []byte(";"))
		k, v, ok := bytes.Cut(bytes.TrimSpace(p), []byte("="))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(k), []byte("q")) {
			continue
		}
		v = bytes.TrimSpace(v)
		if len(v) == 0 || v[0] != '0' {
			return false
		}
		return len(bytes.Trim(v[1:], ".0")) == 0
	}
	return false
}
