package markup

// The VAST fast path's walk as it was before it checked the document's
// characters first and kept its lexer, and the lexer's content and endTag
// as they were before content dispatched on the byte after '<' and endTag
// compared the open element's name in place: the references the walk and
// the lexer are compared with (TestVASTWalkAgainstRef, FuzzVASTWalkRef).

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// walkRef is vastWalk.walk as it was.
func (w *vastWalk) walkRef(s string) bool {
	var lx xmlLexer
	lx.reset(s)
	w.frames, w.calls, w.texts, w.outer = w.frames[:0], w.calls[:0], w.texts[:0], -1
	w.content.reset()
	for {
		switch tok := lx.next(); tok {
		case tokEOF:
			return true
		case tokError:
			return false
		case tokPI:
			if !asciiName(lx.name) || lx.name == "xml" && !xmlVersion10(lx.text) {
				return false
			}
		case tokStart, tokAttr:
			if !asciiName(lx.name) {
				return false
			}
		case tokOpen:
			w.open(lx.local)
		case tokEnd:
			w.close()
		case tokText, tokCDATA:
			if lx.depth > 0 {
				refs := tok == tokText
				if f := &w.frames[len(w.frames)-1]; f.read {
					f.own.add(lx.text, refs)
				}
				if w.outer >= 0 {
					w.content.add(lx.text, refs)
				}
			}
		}
	}
}

// walkCall is a vastCall with its text resolved.
type walkCall struct {
	name, text string
	first      bool
}

// walkCalls walks s with walk on w and lists its calls, nil when it
// declines s.
func walkCalls(w *vastWalk, s string, walk func(w *vastWalk, s string) bool) []walkCall {
	if !walk(w, s) {
		return nil
	}
	out := []walkCall{}
	for _, c := range w.calls {
		text := c.text
		if c.n > 0 {
			text = unsafe.String(&w.texts[c.off], c.n)
		}
		out = append(out, walkCall{c.name, strings.Clone(text), c.first})
	}
	return out
}

// nextRef is xmlLexer.next with the reference content and endTag.
func (lx *xmlLexer) nextRef() xmlToken {
	if lx.state == lexContent {
		return lx.contentRef()
	}
	return lx.next()
}

// contentRef is content as it was.
func (lx *xmlLexer) contentRef() xmlToken {
	if lx.endNext {
		lx.endNext = false
		lx.name, lx.local = lx.tag, lx.tagLocal
		return lx.closed()
	}
	s := lx.s
	if lx.i < len(s) && s[lx.i] != '<' {
		lt := strings.IndexByte(s[lx.i:], '<')
		if lt < 0 {
			return lx.fail()
		}
		t := s[lx.i : lx.i+lt]
		if !validText(t) {
			return lx.fail()
		}
		lx.text = t
		lx.i += lt
		return tokText
	}
	rest := s[lx.i:]
	if rest == "" {
		return lx.fail()
	}
	switch {
	case strings.HasPrefix(rest, "</"):
		return lx.endTagRef()
	case strings.HasPrefix(rest, "<!--"):
		return lx.comment()
	case strings.HasPrefix(rest, "<![CDATA["):
		lx.i += 9
		end := strings.Index(s[lx.i:], "]]>")
		if end < 0 {
			return lx.fail()
		}
		lx.text = s[lx.i : lx.i+end]
		lx.i += end + 3
		return tokCDATA
	case strings.HasPrefix(rest, "<?"):
		return lx.pi(false)
	}
	lx.i++
	return lx.startTag()
}

// endTagRef is endTag as it was: the end tag's name read, then compared.
func (lx *xmlLexer) endTagRef() xmlToken {
	lx.i += 2
	n := lx.readName()
	if n == "" {
		return lx.fail()
	}
	s := lx.s
	at := int(lx.open[lx.depth-1][0])
	if len(s)-at < len(n) || s[at:at+len(n)] != n || (at+len(n) < len(s) && isNameChar(s[at+len(n)])) {
		return lx.fail()
	}
	lx.skipSpace()
	if lx.i >= len(s) || s[lx.i] != '>' {
		return lx.fail()
	}
	lx.i++
	lx.name = n
	return lx.closed()
}

// validTextRef is validText as it was, without the short-text shortcut.
func validTextRef(t string) bool {
	if strings.Contains(t, "]]>") {
		return false
	}
	for {
		amp := strings.IndexByte(t, '&')
		if amp < 0 {
			return true
		}
		_, n := reference(t[amp:])
		if n == 0 {
			return false
		}
		t = t[amp+n:]
	}
}

// validValueRef is validValue as it was, without the short-text shortcut.
func validValueRef(v string) bool {
	if strings.IndexByte(v, '<') >= 0 {
		return false
	}
	for {
		amp := strings.IndexByte(v, '&')
		if amp < 0 {
			return true
		}
		_, n := reference(v[amp:])
		if n == 0 {
			return false
		}
		v = v[amp+n:]
	}
}

// lexerState is what a token left in the lexer.
type lexerState struct {
	tok                           xmlToken
	i, depth                      int
	state                         uint8
	name, local, value, text, tag string
}

// sameTokens fails when the lexer and the reference lexer read s to
// different tokens or states.
func sameTokens(t *testing.T, s string) {
	t.Helper()
	var lx, ref xmlLexer
	lx.reset(s)
	ref.reset(s)
	for k := 0; ; k++ {
		tok, want := lx.next(), ref.nextRef()
		if want == tokError { // where the lexer stopped is not read
			require.Equal(t, want, tok, "token %d of %q", k, s)
			return
		}
		got := lexerState{tok, lx.i, lx.depth, lx.state, lx.name, lx.local, lx.value, lx.text, lx.tag}
		require.Equal(t, lexerState{want, ref.i, ref.depth, ref.state, ref.name, ref.local, ref.value, ref.text, ref.tag}, got, "token %d of %q", k, s)
		if tok == tokEOF {
			return
		}
	}
}

// sameWalk fails when the walk and the reference walk differ on s: one
// declines it and not the other, or they make different calls; or when
// the lexer's tokens differ from the reference lexer's.
func sameWalk(t *testing.T, s string) {
	t.Helper()
	sameTokens(t, s)
	for i := 0; i < len(s) && i < 40; i++ { // around shortText
		for _, p := range []string{s[i:], s[:i]} {
			require.Equal(t, validTextRef(p), validText(p), "%q", p)
			require.Equal(t, validValueRef(p), validValue(p), "%q", p)
		}
	}
	want := walkCalls(new(vastWalk), s, (*vastWalk).walkRef)
	require.Equal(t, want, walkCalls(new(vastWalk), s, (*vastWalk).walk), "%q", s)
	// A walk reused, after another document (as from the pool).
	w := new(vastWalk)
	w.walk(`<VAST version="4.2"><Ad id="1"><InLine><Impression>https://x</Impression></InLine></Ad></VAST>`)
	require.Equal(t, want, walkCalls(w, s, (*vastWalk).walk), "%q", s)
}

// walkRefDocs are the documents the walks are compared on: every markup
// string of the tests and their spellings, and the characters that decide
// whether the fast path reads a document (non-ASCII names and text,
// controls, U+FFFE, a byte order mark, invalid UTF-8).
func walkRefDocs(t testing.TB) []string {
	imp := func(text string) string {
		return `<VAST version="4.2"><Ad><InLine><Impression>` + text + `</Impression></InLine></Ad></VAST>`
	}
	docs := []string{distinctVAST, vast42Inline, "a]]>b", "]]>", "]]", "a&amp;b", "a&bogus;b", "a<b", "&#0;", "&#x41;",
		"0123456789abcdef]]>", "0123456789abcde&", "0123456789abcdef&amp;", "0123456789abcdef<", imp("http://x"), imp("ht<x/>tp://x"), imp("é"), imp("\x01"), imp("\t\r\n"),
		imp("\uFFFE"), imp("\uFFFF"), imp("\xff"), imp("\xef\xbf"), "\ufeff" + imp("x"), "\ufeff\ufeff" + imp("x"),
		`<VAST><Ad é="1"/></VAST>`, `<VAST><é/></VAST>`, `<VAST><a:é/></VAST>`, `<?é x?><VAST/>`, `<VAST><?é x?></VAST>`,
		`<?xml version="1.1"?><VAST/>`, `<?xml version="1.0"?><VAST/>`, `<VAST x="é"/>`, `<VAST x="` + "\x01" + `"/>`,
		"<VAST/>\x01", "<VAST/>é", "é<VAST/>", `<VAST><!-- é --></VAST>`, `<VAST><![CDATA[é]]></VAST>`}
	for _, s := range testStrings(t) {
		docs = append(docs, s, "\ufeff \n"+s+"\n<!-- c -->", strings.ReplaceAll(s, "\n", "\r\n"), strings.ReplaceAll(s, ">", ">\r"))
	}
	return docs
}

// TestVASTWalkAgainstRef compares the walk with the reference on
// walkRefDocs.
func TestVASTWalkAgainstRef(t *testing.T) {
	read := 0
	for _, s := range walkRefDocs(t) {
		sameWalk(t, s)
		if new(vastWalk).walk(s) {
			read++
		}
	}
	t.Logf("%d read by the walk", read)
	require.Greater(t, read, 50)
}

// FuzzVASTWalkRef: on any input the walk reads what the reference reads,
// with the same calls.
func FuzzVASTWalkRef(f *testing.F) {
	for _, s := range walkRefDocs(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameWalk(t, s)
	})
}

// TestLexerEndTags: an end tag closes the innermost element when it names
// it exactly: no longer, no shorter, no other case or prefix, white space
// before its '>' only.
func TestLexerEndTags(t *testing.T) {
	f := func(doc string, ok bool) {
		t.Helper()
		var lx xmlLexer
		lx.reset(doc)
		tok := lx.next()
		for tok != tokEOF && tok != tokError {
			tok = lx.next()
		}
		require.Equal(t, ok, tok == tokEOF, doc)
	}
	f(`<VAST><Ad></Ad></VAST>`, true)
	f(`<VAST><Ad></Ad ></VAST >`, true)
	f("<VAST><Ad></Ad\t\r\n></VAST>", true)
	f(`<VAST><Ad/></VAST>`, true)
	f(`<a:VAST></a:VAST>`, true)
	f(`<VAST><Ad></Adx></VAST>`, false)
	f(`<VAST><Ad></A></VAST>`, false)
	f(`<VAST><Ad></ad></VAST>`, false)
	f(`<VAST><Ad></ Ad></VAST>`, false)
	f(`<VAST><Ad></Ad></VASTx>`, false)
	f(`<VAST><Ad></Ad></VAS>`, false)
	f(`<VAST><Ad></Ad></VAST`, false)
	f(`<VAST><Ad></Ad></`, false)
	f(`<VAST><Ad></Ad></VAST x>`, false)
	f(`<VAST><Ad></Ad></VAST-></VAST>`, false)
	f(`<VAST><Ad></Ad></VAST.>`, false)
	f(`<a:VAST></VAST>`, false)
	f(`<VAST></a:VAST>`, false)
	f(`<VAST><Ad></VAST></Ad>`, false)
	f(`<VAST><Ad><`, false)
	f(`<VAST><Ad><!`, false)
	f(`<VAST><Ad><!-`, false)
	f(`<VAST><Ad><![CDATA`, false)
	f(`<VAST><Ad><![CDATA[x]]`, false)
	f(`<VAST><Ad><![cdata[x]]></Ad></VAST>`, false)
	f(`<VAST><Ad><!x></Ad></VAST>`, false)
	f(`<VAST><Ad><?`, false)
	f(`<VAST><Ad><?p?></Ad></VAST>`, true)
	f(`<VAST><Ad><![CDATA[x]]><!-- c --></Ad></VAST>`, true)
	f(`<VAST><Ad>x</Ad></VAST>`, true)
}
