package markup

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// scannedTag is a start tag as the token reading gets it: its raw bytes
// and, for script and style, its text.
type scannedTag struct {
	raw, text string
}

// tokenizerTags are the start tags of doc as readTokenizer takes them from
// x/net/html's tokenizer.
func tokenizerTags(doc []byte) []scannedTag {
	z := html.NewTokenizer(bytes.NewReader(doc))
	var out []scannedTag
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		st := scannedTag{raw: string(z.Raw())}
		if name, _ := z.TagName(); string(name) == "script" || string(name) == "style" {
			for z.Next() == html.TextToken {
				st.text += string(z.Text())
			}
		}
		out = append(out, st)
	}
}

// fastTags are the start tags of doc as readScanned takes them from
// scanTags, and whether doc ends inside one; false when scanTags declines
// doc.
func fastTags(doc []byte) (tags []scannedTag, cut, ok bool) {
	t := getTokenizer(doc)
	defer putTokenizer(t)
	spans, cut, ok := scanTags(nil, doc)
	if !ok {
		return nil, false, false
	}
	out := []scannedTag{}
	for _, sp := range spans {
		st := scannedTag{raw: string(doc[sp.tag0:sp.tag1])}
		if name, _ := t.tagOf(doc[sp.tag0:sp.tag1], plainMarkup(doc)); name == "script" || name == "style" {
			st.text = string(rawText(doc[sp.text0:sp.text1], &t.content))
		}
		out = append(out, st)
	}
	return out, cut, true
}

// tokenResult is what a token reading of a document did.
type tokenResult struct {
	found    Finding
	insecure bool
	scripts  []string
}

// sameTokenReading fails when scanTags reads doc and its tags, or the
// reading of them in any mode, differ from the tokenizer's; it reports
// whether scanTags read doc.
func sameTokenReading(t *testing.T, doc []byte) bool {
	t.Helper()
	fast, cut, ok := fastTags(doc)
	if !ok {
		require.Contains(t, string(doc), "<!--", "declined %q", doc)
		return false
	}
	ref := tokenizerTags(doc)
	if len(ref) == 0 {
		ref = []scannedTag{}
	}
	require.Equal(t, ref, fast, "%q", doc)
	require.Equal(t, tokenizerCut(html.NewTokenizer(bytes.NewReader(doc))), cut, "cut: %q", doc)
	sameScannedTags(t, doc)
	for _, m := range []struct{ judge, secure bool }{{true, false}, {false, true}, {true, true}} {
		run := func(read func(a *analysis)) (r tokenResult) {
			a := newAnalysis(DefaultLimits, m.judge, m.secure)
			a.observe = func(src []byte, _ bool) { r.scripts = append(r.scripts, string(src)) }
			read(a)
			r.found, r.insecure = a.result(), a.insecure
			return r
		}
		got := run(func(a *analysis) { a.readTokens(doc, 0) })
		want := run(func(a *analysis) {
			t := getTokenizer(doc)
			defer putTokenizer(t)
			a.readTokenizer(t, 0)
		})
		require.Equal(t, want, got, "%+v %q", m, doc)
	}
	return true
}

// sameScannedTags fails when a tag of plain markup doc, split by
// scannedTag from the attributes scanTagsAttrs recorded, differs from the
// same tag read on its own by tagOf (splitPlainTag, or the tokenizer).
func sameScannedTags(t *testing.T, doc []byte) {
	t.Helper()
	if !plainMarkup(doc) {
		return
	}
	scan, ref := getTokenizer(doc), getTokenizer(nil)
	defer putTokenizer(scan)
	defer putTokenizer(ref)
	tags, _, ok := scanTagsAttrs(nil, &scan.attrs, doc)
	if !ok {
		return
	}
	for _, sp := range tags {
		name, attrs, ascii := scan.scannedTag(doc, sp)
		if ascii { // element skips lower-casing them
			require.Equal(t, strings.ToLower(name), name, "tag %q of %q", doc[sp.tag0:sp.tag1], doc)
			for _, at := range attrs {
				require.Equal(t, strings.ToLower(at.Key), at.Key, "tag %q of %q", doc[sp.tag0:sp.tag1], doc)
			}
		}
		got := fmt.Sprintf("%q %q", name, attrs)
		name, attrs = ref.tagOf(doc[sp.tag0:sp.tag1], true)
		require.Equal(t, fmt.Sprintf("%q %q", name, attrs), got, "tag %q of %q", doc[sp.tag0:sp.tag1], doc)
	}
}

// htmlFastDocs are documents at every turn of the scan: tags cut by the
// end, quoted '>', end tags with attributes, comments and their odd ends,
// bogus comments, doctypes, raw text and RCDATA elements, script escapes,
// CR and NUL in script text.
var htmlFastDocs = []string{
	`<a<b>`, `<<a>`, `< a>`, `<1>`, `<a =">">x`, `<a b= ">">`, `<a b=">`, `<a b='>'c>`, `<a b ="x>"y>`,
	`<a b="c"d="e>"f>`, `<a/b=">">`, `<a b/=">">`, `<a =b=">">`, `<a b==">">`, `<a b=c">"d>`,
	`</p a=">"><img src=x onerror=a()>`, `</p a='>'><img>`, `</ ><img>`, `</1><img>`, `</><img>`, `</`, `</p`,
	`<!--><img>`, `<!---><img>`, `<!----><img>`, `<!-- a --!><img>`, `<!-- a --!x><img>-->`, `<!-- a -!><img>-->`,
	`<!-- a -- ><img>-->`, `<!--!><img>-->`, `<!---!><img>-->`, `<!----!><img>`, `<!-- --!--><img>`, `<!-- --!-x><img>-->`,
	`<!-- --!!><img>-->`, `<!-- ---><img>`, `<!-<img>>`, `<!x><img>`, `<!><img>`, `<!`, `<!-`, `<!--`, `<!-- x`,
	`<!DOCTYPE html><img>`, `<!doctype><img>`, `<!DOCTYPE`, `<!DOCTY`, `<!DOC x="<img>"><img>`, `<?xml version="1.0"?><img>`, `<?>`, `<?`,
	`<![CDATA[<img>]]><img>`, `<title><img></title><img>`, `<TITLE><img></TiTlE x=">"><img>`, `<textarea><img></textarea ><img>`,
	`<iframe src=x><img></iframe/><img>`, `<noembed><img></noembed><img>`, `<noframes><img></noframes><img>`,
	`<noscript><img></noscript><img>`, `<xmp><img></xmp><img>`, `<plaintext><img></plaintext><img>`, `<PLAINTEXT/><img>`,
	`<iframe><img></iframe`, `<iframe><img></iframex><img>`, `<xmp><img></xm><img>`, `<title></title`, `<style></style`,
	`<script>a()</script><img>`, `<SCRIPT>a()</ScRiPt ><img>`, `<script>a()</script/><img>`, `<script>a()</scripts>b()</script>`,
	`<script>a()</script`, `<script>a()</scrip`, `<script>a()`, `<script>`, `<script></script>`, `<script/>a()</script>`,
	`<script>a("</p>")</script>`, `<script>a("<!-")</script>`, `<script>a("<!")</script>`, `<script>a("<!--")</script>`,
	`<script><!-- a() --></script><img>`, `<script>a()</script><!--<script>-->`, `<script type=">">a()</script>`,
	`<script>a()</script x=">"><img>`, `<style>a{}</style x='>'><img>`, `<style>*{background:url(http://x)}</style>`,
	"<script>a()\r\nb()\rc()\n</script>", "<script>a(\"\x00\")</script>", "<style>*{background:url(http://x\r)}\x00</style>",
	"<script\x00>a()</script>", "<scr\x00ipt>a()</script>", "<a\rhref=javascript:a()>", "<a href=\"java\rscript:a()\">",
	"<ſcript>a()</script>", "<scrİpt>a()</script>", "<K>", "<a \u212a=1>", `<a href="x&amp;y" onclick="a()">`,
	"<p>\x00<img src=x onerror=a()>", "<img src=x\x00 onerror=a()>", `<iframe srcdoc="<script>top.location=1</script>">`,
	`<a` + strings.Repeat(` k0 k1 k2 k3 k4 k5 k6 k7 k8 k9 ka kb kc kd ke kf kg kh ki kj kk kl km kn ko kp kq kr ks kt ku kv kw`, 2) + ` onclick=a()>`,
}

// htmlFastVariants are doc and the spellings around it the scan must read
// as the tokenizer does: CR LF line ends, CR after each tag, upper case,
// and cut short before and after every '<' and '>'.
func htmlFastVariants(doc string) []string {
	out := []string{doc, strings.ReplaceAll(doc, "\n", "\r\n"), strings.ReplaceAll(doc, ">", ">\r"), strings.ToUpper(doc)}
	for i := 0; i < len(doc); i++ {
		if doc[i] == '<' || doc[i] == '>' {
			out = append(out, doc[:i], doc[:i+1])
		}
	}
	return out
}

// TestHTMLFastAgainstTokenizer runs both token readings over every markup
// string of the tests, the golden files and the fuzz corpora, and their
// variants.
func TestHTMLFastAgainstTokenizer(t *testing.T) {
	docs := append(append(append(append([]string{string(scriptHeavy(20 << 10))}, htmlFastDocs...), testStrings(t)...), fuzzCorpus(t)...), tokenizerDocs...)
	docs = append(append(docs, splitTagDocs...), differentialHTML...)
	var read, declined int
	for _, doc := range docs {
		for _, v := range htmlFastVariants(doc) {
			if sameTokenReading(t, []byte(v)) {
				read++
			} else {
				declined++
			}
		}
	}
	t.Logf("%d documents, %d readings by the scan, %d declined", len(docs), read, declined)
	require.Greater(t, read, 50*declined)
}

// TestHTMLFastDeclines: the scan leaves to the tokenizer a script whose
// text holds "<!--" before its end tag, and only that.
func TestHTMLFastDeclines(t *testing.T) {
	f := func(doc string, read bool) {
		t.Helper()
		_, _, ok := scanTags(nil, []byte(doc))
		require.Equal(t, read, ok, doc)
	}
	f(`<script><!-- a() --></script>`, false)
	f(`<SCRIPT>a("<!--")`, false)
	f(`<script>a()</script><!-- x -->`, true)
	f(`<style><!-- a{} --></style>`, true)
	f(`<script>a("<!-")</script>`, true)
	f(distinctBanner, true)
	f(string(scriptHeavy(20<<10)), true)
}

// FuzzHTMLFast: on any input the scan reads, it yields the tokenizer's
// start tags and script and style texts, and their reading finds what the
// tokenizer's finds.
func FuzzHTMLFast(f *testing.F) {
	for _, s := range append(append(htmlFastDocs, testStrings(f)...), fuzzCorpus(f)...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameTokenReading(t, []byte(s))
	})
}
