package markup

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// vastResult is what a VAST reading did: its findings and every vastText
// call, in order.
type vastResult struct {
	found    Finding
	insecure bool
	calls    []string
}

// vastReadings reads doc both ways, the fast path and encoding/xml, each
// in a fresh analysis; fastRead is false when the fast path left doc to
// encoding/xml.
func vastReadings(doc []byte, judge, secure, trailingOK bool) (fast, ref vastResult, fastRead bool) {
	run := func(read func(a *analysis) bool) (r vastResult, ok bool) {
		a := newAnalysis(DefaultLimits, judge, secure)
		a.observeVAST = func(name, text string) { r.calls = append(r.calls, name+" "+strconv.Quote(text)) }
		ok = read(a)
		r.found, r.insecure = a.result(), a.insecure
		return r, ok
	}
	fast, fastRead = run(func(a *analysis) bool { return a.readVASTFast(doc, 0) })
	ref, _ = run(func(a *analysis) bool { a.readVASTXML(doc, 0, trailingOK); return true })
	return fast, ref, fastRead
}

// sameVASTReading fails when the fast path reads doc and differs from
// encoding/xml in any mode, or when the sniffing answers otherwise than
// encoding/xml; it reports whether the fast path read doc.
func sameVASTReading(t *testing.T, doc []byte) bool {
	t.Helper()
	read := false
	for _, m := range []struct{ judge, secure, trailingOK bool }{
		{true, false, false}, {false, true, false}, {true, true, false}, {true, true, true},
	} {
		fast, ref, ok := vastReadings(doc, m.judge, m.secure, m.trailingOK)
		if ok {
			read = true
			require.Equal(t, ref, fast, "%+v %q", m, doc)
		}
	}
	if vast, ok := sniffVAST(string(doc)); ok {
		require.Equal(t, looksLikeVASTXML(doc), vast, "sniffed %q", doc)
	}
	return read
}

// testStrings lists every string literal of the package's tests that
// holds markup, and every string in the gates' golden files (adm,
// vasttag, whole responses) that does.
func testStrings(t testing.TB) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if strings.ContainsRune(s, '<') && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range []string{vast42Inline, distinctVAST, distinctBanner} {
		add(s)
	}
	for _, s := range testLiterals(t) {
		add(s)
	}
	for _, g := range goldenFiles(t) {
		eachString(g.v, true, func(_, s string) { add(s) }) // a native adm holds a vasttag
	}
	return out
}

// TestVASTFastAgainstXML runs both VAST readings over every markup string
// of the tests and the golden files, as written and in the spellings the
// fast path must treat as encoding/xml does.
func TestVASTFastAgainstXML(t *testing.T) {
	read := 0
	all := testStrings(t)
	for _, s := range all {
		for _, doc := range []string{s, "\ufeff \n" + s + "\n<!-- c -->", strings.ReplaceAll(s, "\n", "\r\n"), strings.ReplaceAll(s, ">", ">\r")} {
			if sameVASTReading(t, []byte(doc)) {
				read++
			}
		}
	}
	t.Logf("%d strings, %d readings by the fast path", len(all), read)
	require.Greater(t, read, 50)
}

// TestVASTFastCases are the spellings where the two readings could part:
// each is read the same way, and the fast path reads those it should.
func TestVASTFastCases(t *testing.T) {
	f := func(doc string, fast bool) {
		t.Helper()
		require.Equal(t, fast, sameVASTReading(t, []byte(doc)), doc)
	}
	imp := func(text string) string {
		return `<VAST version="4.2"><Ad><InLine><Impression>` + text + `</Impression></InLine></Ad></VAST>`
	}
	f(vast42Inline, true)
	f(distinctVAST, true)
	f(imp(`http://x`), true)
	f(imp(`ht<x/>tp://x`), true)
	f(imp(`java<Error>script:top.location='u'</Error>`), true)
	f(imp(`java<?pi x?>script:top.location='u'`), true)
	f(imp(`java<!-- c -->script&#58;top.location='u'`), true)
	f(imp(` <![CDATA[http://x]]> `), true)
	f(imp("a\r\nb\rc\r&amp;\n&#13;\n<![CDATA[\r\n]]>"), true)
	f(imp(`&lt;&gt;&amp;&apos;&quot;&#x41;&#65;&#x1F600;`), true)
	f(imp(``), true)
	f(imp(`<![CDATA[]]>`), true)
	f(imp(`<Tracking>a</Tracking>b<Tracking>c</Tracking>`), true)
	// Done after an element's own text: its textContent is still read,
	// the next element's text is not.
	f(imp(`http://x<Error>y</Error></Impression><Impression>http://z`), true)
	f(`<VAST version="4.2"><Ad><InLine><Creatives><Creative><CompanionAds><Companion><HTMLResource><![CDATA[<script>top.location=u</script>]]></HTMLResource></Companion></CompanionAds></Creative></Creatives></InLine></Ad></VAST>`, true)
	f(`<Impression>http://x</Impression>`, true) // any root
	f(`<v:VAST xmlns:v="x"><v:Ad><v:InLine><v:IMPRESSION>http://x</v:IMPRESSION></v:InLine></v:Ad></v:VAST>`, true)
	f(`<VAST><impression>http://x</impression><ImPrEsSiOn>http://y</ImPrEsSiOn></VAST>`, true)
	f(`<?xml version="1.0" encoding="ISO-8859-1"?><VAST/>`, true)
	f(`<?xml encoding="UTF-8" version='1.0'?><VAST/>`, true)
	f(`<?xml version="1.1"?><VAST><Impression>http://x</Impression></VAST>`, false) // encoding/xml refuses 1.1
	f(`<?xml version="" ?><VAST/>`, true)
	f(`<?XML version="1.1"?><VAST/>`, true)   // not the declaration to encoding/xml
	f(`<VAST><a:b:c>x</a:b:c></VAST>`, false) // encoding/xml refuses two colons
	f(`<VAST a:b:c="1"></VAST>`, false)
	f(`<VAST><Impression>x</Impression><é/></VAST>`, false) // non-ASCII names are encoding/xml's
	f(`<VAST><Impression>é</Impression></VAST>`, true)
	f(`<!DOCTYPE VAST [<!ENTITY x "http://y">]><VAST><Impression>&x;</Impression></VAST>`, false)
	f(`<VAST><Impression>http://x</Impression></VAST><script>top.location=u</script>`, false)
	f(`<VAST><Impression>http://x</Impression>`, false)
	f(`<VAST><Impression>&nbsp;http://x</Impression></VAST>`, false)
	f(`<VAST><Impression>http://x</impression></VAST>`, false)
	f(`<VAST version=4><Impression>http://x</Impression></VAST>`, false)
	f("<VAST><Impression>\x01</Impression></VAST>", false)
}

// TestSniffVAST checks the sniffing's plain answers against encoding/xml
// and that it has them for the usual openings.
func TestSniffVAST(t *testing.T) {
	f := func(s string, decided bool) {
		t.Helper()
		vast, ok := sniffVAST(s)
		require.Equal(t, decided, ok, s)
		if ok {
			require.Equal(t, looksLikeVASTXML([]byte(s)), vast, s)
		}
	}
	f(`<VAST version="4.0">`, true)
	f(`<vast>`, true)
	f(`<v:Vast xmlns:v="x">`, true)
	f(`<?xml version="1.0"?><!-- c -->`+"\n"+`<VAST>`, true)
	f(`<?xml version="1.1"?><VAST>`, true)
	f(`<!DOCTYPE html><html><body>`, true)
	f(`<!doctype VAST><VAST>`, true)
	f(`<div class="ad"><a href=x>`, true)
	f(`<VAST`, false)
	f(`<VAST a="<">`, false)
	f("<VAST a=\"\x01\">", true)
	f(`< VAST>`, true)
	f(`<1VAST>`, true)
	f(`<!-- x -- y --><VAST>`, true)
	f(`<!-`, true)
	f(`https://ads.example/vast.xml`, true)
	f(" \n\t", true)
	f("", true)
	f(strings.Repeat("<!---->", 64)+"<VAST>", true)
	f(strings.Repeat("<!---->", 63)+"<VAST>", true)
	// encoding/xml's: references, non-ASCII text and names, CDATA, end
	// tags, quoted DOCTYPEs, unquoted or repeated attributes of a VAST tag.
	f(`&#32;<VAST>`, false)
	f("\u00a0<VAST>", false)
	f(`<é>`, false)
	f(`<a:b:VAST>`, false)
	f(`<![CDATA[ ]]><VAST>`, false)
	f(`</x><VAST>`, false)
	f(`<!DOCTYPE VAST SYSTEM "v.dtd"><VAST>`, false)
	f(`<VAST version=4>`, false)
	f(`<VAST a="1" a="2">`, false)
}

// FuzzVASTFast: on any input the fast path reads, it reads what
// encoding/xml reads (findings, insecure, every vastText call), and the
// sniffing's plain answers are encoding/xml's.
func FuzzVASTFast(f *testing.F) {
	for _, s := range testStrings(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameVASTReading(t, []byte(s))
	})
}

// BenchmarkVASTReadings compares the two VAST readings on the load
// harness's ad and the IAB 4.2 sample (secureMarkup and markupSafety at
// once, as Read), and the two sniffings.
func BenchmarkVASTReadings(b *testing.B) {
	for _, c := range []struct{ name, doc string }{{"distinct", distinctVAST}, {"iab42", vast42Inline}} {
		doc := []byte(c.doc)
		b.Run("fast/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				a := newAnalysis(DefaultLimits, true, true)
				if !a.readVASTFast(doc, 0) {
					b.Fatal("not read")
				}
			}
		})
		b.Run("xml/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				a := newAnalysis(DefaultLimits, true, true)
				a.readVASTXML(doc, 0, false)
			}
		})
		b.Run("sniff/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !looksLikeVAST(doc) {
					b.Fatal("not VAST")
				}
			}
		})
		b.Run("sniff-xml/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !looksLikeVASTXML(doc) {
					b.Fatal("not VAST")
				}
			}
		})
	}
}
