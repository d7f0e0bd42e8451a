package markup

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// tokenizerDocs leave a tokenizer in every kind of state: inside raw text,
// script data, an attribute, a comment, with a NUL, at EOF.
var tokenizerDocs = []string{
	`<div class="ad"><a href="https://x/c?id=1"><img src="https://x/i.png" width=300></a></div>`,
	`<script>var a = "<\/script>"; <!-- <script> --></script><p a=b a=c A=d>`,
	`<sCript/>top.location=u`, `<style>a{}</style><title>&lt;x</title><textarea><b></textarea>`,
	`<a href="x`, `<!-- cut`, "<img src=\x00x on\x00load=y>", `<plaintext><a href=x>`, `<xmp><a>`,
	`<p>` + string(make([]byte, 5000)) + `<a href="javascript:x">`, ``,
}

// TestPooledTokenizerReadsAsFresh: a reused tokenizer reads each document
// token for token as html.NewTokenizer does, whatever the one before left.
func TestPooledTokenizerReadsAsFresh(t *testing.T) {
	pooled := tokenizers.New().(*tokenizer)
	for _, prev := range tokenizerDocs {
		for _, doc := range tokenizerDocs {
			pooled.reset([]byte(prev))
			for pooled.z.Next() != html.ErrorToken {
			}
			pooled.reset([]byte(doc))
			fresh := html.NewTokenizer(strings.NewReader(doc))
			for {
				tt := fresh.Next()
				require.Equal(t, tt, pooled.z.Next(), "%q after %q", doc, prev)
				require.Equal(t, string(fresh.Raw()), string(pooled.z.Raw()), doc)
				require.Equal(t, fresh.Token(), pooled.z.Token(), doc)
				if tt == html.ErrorToken {
					require.Equal(t, fresh.Err(), pooled.z.Err(), doc)
					break
				}
			}
		}
	}
}

// tokenReading is what the token reading finds in doc reading every
// attribute through html.Tokenizer.Token, as it did before readAttrs
// left some out.
func tokenReading(doc []byte) (Finding, bool) {
	a := newAnalysis(DefaultLimits, true, true)
	z := html.NewTokenizer(bytes.NewReader(doc))
	text := html.Node{Type: html.TextNode}
	for !a.done() {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		n := html.Node{Type: html.ElementNode, Data: tok.Data, Attr: tok.Attr}
		if tok.Data == "script" || tok.Data == "style" {
			var content []byte
			for z.Next() == html.TextToken {
				content = append(content, z.Text()...)
			}
			if len(content) > 0 {
				text.Data = string(content)
				n.FirstChild = &text
			}
		}
		a.element(&n, nil, 0, false)
	}
	return a.result(), a.insecure
}

// readsAllAttrs checks that the token reading finds in doc what it finds
// reading every attribute.
func readsAllAttrs(t *testing.T, doc []byte) {
	t.Helper()
	a := newAnalysis(DefaultLimits, true, true)
	a.readTokens(doc, 0)
	wantF, wantI := tokenReading(doc)
	require.Equal(t, verdict(wantF), verdict(a.result()), "%q", doc)
	require.Equal(t, wantI, a.insecure, "%q", doc)
}

func TestReadAttrsKeepsWhatElementReads(t *testing.T) {
	for _, doc := range append(tokenizerDocs,
		`<img bac`+"\u212a"+`ground="http://x">`, `<meta HTTP-EQUIV=refresh content=0>`,
		`<script TYPE="text/plain">top.location=u</script>`, `<script LANGUAGE="vbscript">top.location=u</script>`,
		`<a id=x class=y oNcLiCk="top.location=u" data-x=1>`, `<iframe x=1 SRCDOC="&lt;script&gt;top.location=u&lt;/script&gt;">`,
		`<div title="http://x" style="background:url(http://x)">`, `<img alt=x srcset="http://x 1x">`,
		`<body onload="location.replace('u')">`, `<form action="javascript:top.location=u"><input formaction="http://x">`,
	) {
		readsAllAttrs(t, []byte(doc))
	}
}

// TestCleanURL: the C0 controls and spaces around a URL are stripped (and
// nothing else), tab, CR and LF removed inside.
func TestCleanURL(t *testing.T) {
	f := func(u, want string) { t.Helper(); require.Equal(t, want, cleanURL(u), "%q", u) }
	f("\x00\x1f javascript:x \x01", "javascript:x")
	f("\x7fjavascript:x\u00a0", "\x7fjavascript:x\u00a0")
	f(" java\tscr\nipt:\rx ", "javascript:x")
	f("\x00 \x1f", "")
	f("\xffx\x00", "\xffx")
}
