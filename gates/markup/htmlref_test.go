package markup

// The plain-markup token reading as it was before scanTagsAttrs recorded
// only the attributes element reads: every attribute with a key recorded,
// every key lower-cased and deduplicated, then filtered by readsAttr, and
// element lower-casing each name and key again. Kept as the reference the
// reading is compared with (TestHTMLScanAgainstRef, FuzzHTMLScanRef).

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// readTokensRef is readTokens as it was.
func (a *analysis) readTokensRef(b []byte, depth int) {
	t := getTokenizer(b)
	defer putTokenizer(t)
	plain := plainMarkup(b)
	var attrs *[]attrSpan
	if plain {
		attrs = &t.attrs
	}
	if tags, _, ok := scanTagsAttrsRef(t.tags[:0], attrs, b); ok {
		t.tags = tags
		n := html.Node{Type: html.ElementNode}
		for _, sp := range t.tags {
			if a.done() {
				return
			}
			if plain {
				n.Data, n.Attr = t.scannedTagRef(b, sp)
			} else {
				n.Data, n.Attr = t.tagOf(b[sp.tag0:sp.tag1], false)
			}
			var content []byte
			if n.Data == "script" || n.Data == "style" {
				content = rawText(b[sp.text0:sp.text1], &t.content)
			}
			a.element(&n, content, depth, false)
		}
		return
	}
	a.readTokenizer(t, depth)
}

// scanTagsAttrsRef is scanTagsAttrs as it was: every attribute with a key
// recorded.
func scanTagsAttrsRef(dst []tagSpan, attrs *[]attrSpan, b []byte) (tags []tagSpan, cut, ok bool) {
	n := len(b)
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 || i+j+1 >= n {
			return dst, false, true
		}
		i += j
		switch c := b[i+1]; {
		case isASCIILetter(c):
			a0 := 0
			if attrs != nil {
				a0 = len(*attrs)
			}
			name, end := tagEndRef(b, i+1, attrs)
			if end < 0 {
				return dst, true, true
			}
			sp := tagSpan{tag0: i, tag1: end, name: name, attr0: a0, attr1: a0}
			if attrs != nil {
				sp.attr1 = len(*attrs)
			}
			i = end
			raw := rawTextElementRef(b[sp.tag0+1 : name])
			switch raw {
			case "":
			case "plaintext":
				return append(dst, sp), false, true
			default:
				i = rawTextEnd(b, end, raw)
				if raw == "script" && bytes.Contains(b[end:i], []byte("<!--")) {
					return dst, false, false
				}
				if raw == "script" || raw == "style" {
					sp.text0, sp.text1 = end, i
				}
			}
			dst = append(dst, sp)
		case c == '/':
			switch {
			case i+2 >= n:
				return dst, false, true
			case b[i+2] == '>':
				i += 3
			case isASCIILetter(b[i+2]):
				if _, i = tagEndRef(b, i+2, nil); i < 0 {
					return dst, false, true
				}
			default:
				if i = closeAngle(b, i+2); i < 0 {
					return dst, false, true
				}
			}
		case c == '!':
			if i+3 < n && b[i+2] == '-' && b[i+3] == '-' {
				i = commentEnd(b, i+4)
			} else {
				i = closeAngle(b, i+2)
			}
			if i < 0 {
				return dst, false, true
			}
		case c == '?':
			if i = closeAngle(b, i+1); i < 0 {
				return dst, false, true
			}
		default:
			i++
		}
	}
}

// tagEndRef is tagEnd as it was: every attribute with a key appended.
func tagEndRef(b []byte, i int, attrs *[]attrSpan) (name, end int) {
	n := len(b)
	for i < n && tagClass[b[i]]&endsName == 0 {
		i++
	}
	name = i
	for {
		if i = skipTagSpace(b, i); i >= n {
			return name, -1
		}
		if b[i] == '>' {
			return name, i + 1
		}
		k0 := i
		if b[i] == '=' {
			i++
		}
		for i < n && tagClass[b[i]]&endsKey == 0 {
			i++
		}
		k1 := i
		v0, v1 := i, i
		if i = skipTagSpace(b, i); i >= n {
			return name, -1
		}
		switch b[i] {
		case '/':
			i++
		case '=':
			if i = skipTagSpace(b, i+1); i >= n {
				return name, -1
			}
			switch q := b[i]; q {
			case '>':
			case '"', '\'':
				j := bytes.IndexByte(b[i+1:], q)
				if j < 0 {
					return name, -1
				}
				v0, v1 = i+1, i+1+j
				i += j + 2
			default:
				v0 = i
				for i < n && tagClass[b[i]]&endsValue == 0 {
					i++
				}
				v1 = i
			}
		}
		if attrs != nil && k1 > k0 {
			*attrs = append(*attrs, attrSpan{key0: k0, key1: k1, val0: v0, val1: v1})
		}
	}
}

// rawTextElementRef is rawTextElement as it was: each name tried in turn.
func rawTextElementRef(name []byte) string {
	if len(name) < 3 || len(name) > 9 {
		return ""
	}
	for _, s := range [...]string{"script", "style", "iframe", "noembed", "noframes", "noscript", "plaintext", "textarea", "title", "xmp"} {
		if len(s) == len(name) && equalFoldLower(name, s) {
			return s
		}
	}
	return ""
}

// scannedTagRef is scannedTag as it was: every key lower-cased into
// t.lower and deduplicated, then filtered by splitAttrs.
func (t *tokenizer) scannedTagRef(b []byte, sp tagSpan) (string, []html.Attribute) {
	lower := appendLower(t.lower[:0], b[sp.tag0+1:sp.name])
	nameEnd := len(lower)
	t.spans = t.spans[:0]
	for _, at := range t.attrs[sp.attr0:sp.attr1] {
		key0 := len(lower)
		lower = appendLower(lower, b[at.key0:at.key1])
		if t.seenKey(lower, key0) {
			lower = lower[:key0]
			continue
		}
		if len(t.spans) == maxSplitAttrs {
			t.lower = lower
			return t.tagOf(b[sp.tag0:sp.tag1], true)
		}
		t.spans = append(t.spans, attrSpan{key0: key0, key1: len(lower), val0: at.val0, val1: at.val1})
	}
	t.lower = lower
	return viewString(lower[:nameEnd]), t.splitAttrs(b)
}

// sameAsRef fails when the token reading of doc, or the tags its scan
// finds and splits, differ from the reference's.
func sameAsRef(t *testing.T, doc []byte) {
	t.Helper()
	for _, m := range []struct{ judge, secure bool }{{true, false}, {false, true}, {true, true}} {
		run := func(read func(a *analysis)) (r tokenResult) {
			a := newAnalysis(DefaultLimits, m.judge, m.secure)
			a.observe = func(src []byte, _ bool) { r.scripts = append(r.scripts, string(src)) }
			read(a)
			r.found, r.insecure = a.result(), a.insecure
			return r
		}
		got := run(func(a *analysis) { a.readTokens(doc, 0) })
		want := run(func(a *analysis) { a.readTokensRef(doc, 0) })
		require.Equal(t, want, got, "%+v %q", m, doc)
	}
	if !plainMarkup(doc) {
		return
	}
	scan, ref := getTokenizer(doc), getTokenizer(doc)
	defer putTokenizer(scan)
	defer putTokenizer(ref)
	tags, cut, ok := scanTagsAttrs(nil, &scan.attrs, doc)
	refTags, refCut, refOK := scanTagsAttrsRef(nil, &ref.attrs, doc)
	require.Equal(t, refOK, ok, "%q", doc)
	require.Equal(t, refCut, cut, "%q", doc)
	require.Equal(t, len(refTags), len(tags), "%q", doc)
	for i, sp := range tags {
		rsp := refTags[i]
		require.Equal(t, [6]int{rsp.tag0, rsp.tag1, rsp.text0, rsp.text1, rsp.name}, [6]int{sp.tag0, sp.tag1, sp.text0, sp.text1, sp.name}, "%q", doc)
		name, attrs, ascii := scan.scannedTag(doc, sp)
		got := fmt.Sprintf("%q %q", name, attrs)
		if ascii { // element skips lower-casing them
			require.Equal(t, strings.ToLower(name), name, "%q", doc)
			for _, at := range attrs {
				require.Equal(t, strings.ToLower(at.Key), at.Key, "%q", doc)
			}
		}
		name, attrs = ref.scannedTagRef(doc, rsp)
		require.Equal(t, fmt.Sprintf("%q %q", name, attrs), got, "tag %q of %q", doc[sp.tag0:sp.tag1], doc)
		require.Equal(t, rawTextElementRef(doc[sp.tag0+1:sp.name]), rawTextElement(doc[sp.tag0+1:sp.name]))
	}
}

// refDocs are the documents the token readings are compared on: those of
// TestHTMLFastAgainstTokenizer, keys of every case and length around the
// ones element reads, and the load harness's banner.
func refDocs(t testing.TB) []string {
	docs := append(append(append(append([]string{string(scriptHeavy(20 << 10)), distinctBanner,
		// Tags without an attribute element reads: only script and style
		// are read (noscript goes to the tree).
		`<div><p><span class=x><meta><script>top.location=1</script><style>*{background:url(http://x)}</style></span>`,
		`<DIV><META><SCRIPT>top.location=1</SCRIPT><Style>*{background:url(http://x)}</sTyle><iframe></iframe>`,
		`<ſcript>top.location=1</script><Keygen><scrİpt>top.location=1</script>`}, htmlFastDocs...), testStrings(t)...), fuzzCorpus(t)...), tokenizerDocs...)
	docs = append(append(docs, splitTagDocs...), differentialHTML...)
	for _, k := range []string{"href", "src", "style", "srcset", "imagesrcset", "srcdoc", "http-equiv", "type", "language",
		"onclick", "on", "onx", "o", "formaction", "xlink:href", "background", "longdesc", "class", "width", "alt", "data-x",
		"imagesrcsets", "hrefx", "Ｈref", "\u212aey", "ſrc"} {
		for _, v := range []string{k, strings.ToUpper(k), strings.ToUpper(k[:1]) + k[1:]} {
			docs = append(docs,
				`<a `+v+`="javascript:top.location='x'">`,
				`<img `+v+`=http://x `+v+`="javascript:a()" src=y>`,
				`<IFRAME `+v+`="data:text/html,<script>top.location=1</script>"></iframe>`,
				`<meta `+v+`=refresh><script `+v+`=text/plain>top.location=1</script>`)
		}
	}
	return docs
}

// TestHTMLScanAgainstRef compares the token reading with the reference on
// every document of refDocs and their variants.
func TestHTMLScanAgainstRef(t *testing.T) {
	n := 0
	for _, doc := range refDocs(t) {
		for _, v := range htmlFastVariants(doc) {
			sameAsRef(t, []byte(v))
			n++
		}
	}
	t.Logf("%d documents", n)
}

// FuzzHTMLScanRef: on any input the token reading finds what the
// reference finds, and the scan finds and splits the same tags; read as a
// key, the input is read (readsRawKey) exactly when readsAttr reads it.
func FuzzHTMLScanRef(f *testing.F) {
	for _, s := range refDocs(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameAsRef(t, []byte(s))
		sameKeyReading(t, []byte(s))
	})
}

// sameKeyReading fails when readsRawKey and readsAttr of the key in lower
// case (the tokenizer's) disagree on k.
func sameKeyReading(t *testing.T, k []byte) {
	t.Helper()
	var keyCase uint8
	for _, c := range k {
		keyCase |= tagClass[c]
	}
	require.Equal(t, readsAttr(appendLower(nil, k)), readsRawKey(k, keyCase), "%q", k)
}

// TestReadsRawKey: every key readsAttr reads, in every case, longer and
// shorter, and keys it does not read.
func TestReadsRawKey(t *testing.T) {
	keys := []string{"http-equiv", "type", "language", "srcdoc", "style", "srcset", "imagesrcset", "href", "src", "action",
		"formaction", "data", "xlink:href", "poster", "background", "codebase", "cite", "longdesc", "lowsrc", "dynsrc",
		"ping", "manifest", "icon", "archive", "classid", "to", "values", "from", "by", "onclick", "on", "o", "onx",
		"class", "width", "height", "alt", "id", "data-x", "\u212aey", "ſrc", "Ｈref", "a\x80", ""}
	n := 0
	for _, k := range keys {
		for _, v := range []string{k, strings.ToUpper(k), k + "x", "x" + k, k + k} {
			for i := 0; i <= len(v); i++ {
				sameKeyReading(t, []byte(v[:i]))
				sameKeyReading(t, []byte(v[i:]))
				n++
			}
		}
	}
	require.Greater(t, n, 500)
}
