package markup

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// splitTagDocs are tags at every turn of the tokenizer's attribute states.
var splitTagDocs = []string{
	`<a b=">">`, `<a =b>`, `<a ==b>`, `<a b = c>`, `<a b='c'd>`, `<br/>`, `<a/b>`, `<p a=/>`, `<p a=/ >`,
	`<A HREF=X Href=Y hReF=z>`, `<a b c d>`, `<a b=c/>`, `<img src=x/ >`, "<a\tb\f=\nc\td>", `<a b= >`, `<a b=>`,
	`<a b='>'c="'">`, `<a / / b>`, `<a b/c=d>`, `<a b="c"/d>`, `<a b=c"d'e>`, `<a """>`, `<a '=1>`, `<a =>`,
	"<a \u212a=1 k=2 K=3>", "<a ONclick=x onCLICK=y>", `<a b="x&amp;y">`, "<a b=\"x\ry\">", "<a b=\x00>", "<a\x00 b>",
	`<SCRIPT TYPE=module>x</SCRIPT><STYLE Media=x>y</STYLE>`, `<a` + strings.Repeat(` x`, 40) + `>`,
	`<a` + strings.Repeat(` k0 k1 k2 k3 k4 k5 k6 k7 k8 k9 ka kb kc kd ke kf kg kh ki kj kk kl km kn ko kp kq kr ks kt ku kv kw`, 2) + `>`,
	`<a b=c`, `<a b="c`, `<a `, `<a`,
}

// goldenAdms are the adm strings of the gates' golden cases.
func goldenAdms(t testing.TB) []string {
	var out []string
	for _, g := range goldenFiles(t) {
		eachString(g.v, false, func(key, s string) {
			if key == "adm" {
				out = append(out, s)
			}
		})
	}
	return out
}

// splitsAsTokenizer checks that every start tag of doc that splitTag
// splits has the name and attributes html.Tokenizer.Token gives it, and
// returns how many it split and how many it left to TagAttr.
func splitsAsTokenizer(t testing.TB, doc []byte) (split, left int) {
	z := html.NewTokenizer(bytes.NewReader(doc))
	var s tokenizer
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return split, left
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := bytes.Clone(z.Raw())
		tok := z.Token()
		name, ok := s.splitTag(raw)
		if !ok {
			left++
			continue
		}
		split++
		var attrs []html.Attribute
		for _, sp := range s.spans {
			attrs = append(attrs, html.Attribute{Key: string(s.lower[sp.key0:sp.key1]), Val: string(raw[sp.val0:sp.val1])})
		}
		if string(name) != tok.Data || !equalAttrs(attrs, tok.Attr) {
			t.Fatalf("tag %q: split %q %q, tokenizer %q %q", raw, name, attrs, tok.Data, tok.Attr)
		}
	}
}

func equalAttrs(a, b []html.Attribute) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSplitTagAgainstTokenizer: splitTag splits tags token for token as
// x/net/html's tokenizer reads them, on the golden creatives and the tags
// above, and leaves to the tokenizer those it cannot.
func TestSplitTagAgainstTokenizer(t *testing.T) {
	docs := append(append(append([]string{distinctBanner, string(scriptHeavy(4 << 10))}, splitTagDocs...), tokenizerDocs...), differentialHTML...)
	docs = append(docs, goldenAdms(t)...)
	var split, left int
	for _, doc := range docs {
		s, l := splitsAsTokenizer(t, []byte(doc))
		split, left = split+s, left+l
	}
	t.Logf("split %d tags, left %d", split, left)
	require.Greater(t, split, 10*left, "split %d tags, left %d", split, left)
	for _, doc := range []string{`<a b="x&amp;y">`, "<a b=\"x\ry\">", "<a b=\x00>", `<a` + strings.Repeat(` k0 k1 k2 k3 k4 k5 k6 k7 k8 k9 ka kb kc kd ke kf kg kh ki kj kk kl km kn ko kp kq kr ks kt ku kv kw`, 2) + `>`} {
		s, l := splitsAsTokenizer(t, []byte(doc))
		require.Equal(t, [2]int{0, 1}, [2]int{s, l}, "%q", doc)
	}
	s, l := splitsAsTokenizer(t, []byte(`<a`+strings.Repeat(` x`, 40)+`>`))
	require.Equal(t, [2]int{1, 0}, [2]int{s, l}, "repeated keys are one attribute")
}

// TestAttrsOutliveContent: the attributes of a script or style element are
// read after its content, which moves the tokenizer's buffer on (it holds
// 4 KB at first): they are copied out first.
func TestAttrsOutliveContent(t *testing.T) {
	for pad := 3800; pad < 4400; pad += 13 {
		doc := []byte(strings.Repeat("x", pad) + `<script type="text/plain" src="http://x.example/a.js">top.location=u;
//` + strings.Repeat(" ", 9000) + `</script><style media="http://x">a{}` + strings.Repeat(" ", 9000) + `</style>`)
		readsAllAttrs(t, doc)
		f, insecure := Read(doc, HTML, DefaultLimits)
		require.Equal(t, Finding(0), f, pad)
		require.True(t, insecure, pad)
	}
}
