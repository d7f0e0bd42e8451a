package markup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Behaviours that mutants of the readers changed unnoticed, pinned through
// the public entry points (ReadVAST, Insecure) so that they hold whatever the
// readers' insides become.

// TestReadVASTCommentEnd: a comment ends at the first "--", which must be
// followed by '>'; an empty comment is one; a document ending in "--" (no
// '>' left) is malformed, not a crash.
func TestReadVASTCommentEnd(t *testing.T) {
	const doc = `<VAST version="3.0"><Ad><InLine><Creatives><Creative><Linear><Duration>00:00:05</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`
	inline := VASTFacts{Kind: VASTInLine, Version: "3.0", Protocol: 3, Duration: 5}
	for _, adm := range []string{
		doc,
		"<!---->" + doc + "<!---->",
		`<VAST version="3.0"><!----><Ad><InLine><Creatives><Creative><Linear><Duration>00:00:<!---->05</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`,
		doc + "<!-- - -->",
	} {
		require.Equal(t, inline, ReadVAST(adm, nil), adm)
	}
	for _, adm := range []string{
		doc + "<!-- b --",
		doc + "<!----",
		doc + "<!-- b -",
		doc + "<!--",
		`<VAST version="3.0"><Ad><InLine/></Ad><!-- a --`,
		"<!-- a --" + doc,
	} {
		require.NotPanics(t, func() { require.Equal(t, VASTFacts{}, ReadVAST(adm, nil), adm) }, adm)
	}
}

// TestInsecureCSSEscapeThenCR: the white space that ends a CSS hex escape
// may be a CR (or a CRLF). The HTML reader turns CR and CRLF into LF before
// CSS sees them, so a CR never reaches the CSS unescaping; these pin the
// result, whoever normalises: the escape still spells url( and @import.
func TestInsecureCSSEscapeThenCR(t *testing.T) {
	for _, adm := range []string{
		"<style>@impor\\74\r\"http://x/a.css\";</style>",
		"<style>@impor\\74\r\n\"http://x/a.css\";</style>",
		"<style>a{background:\\75\rrl(http://x)}</style>",
		"<div style=\"background:\\75\rrl(http://x)\"></div>",
		"<div style=\"background:u\\72\r\nl(http://x)\"></div>",
		"<div style=\"background:url(\\68\r\nttp://x)\"></div>",
		"<div style=\"background:url('\\68\r\nttp://x')\"></div>",
	} {
		require.True(t, Insecure([]byte(adm), HTML, DefaultLimits), "%q", adm)
	}
	require.False(t, Insecure([]byte("<style>a{background:\\75\rrl(https://x)}</style>"), HTML, DefaultLimits))
}

// TestInsecureJSSurrogatePairs: a \uD8xx escape joins the next escape into
// one character only when that is a \u escape of a low surrogate; before
// any other escape the high surrogate stands alone and the escape is read
// on its own. Joining across \" would swallow the quote that ends alt= and
// hide the src a browser loads.
func TestInsecureJSSurrogatePairs(t *testing.T) {
	for _, c := range []struct {
		adm  string
		want bool
	}{
		{`<script>document.write('<img alt="\uD83D\"DEAD src=http://x>')</script>`, true},
		{`<script>document.write('<img alt="\uD83D\uDE00" src=http://x>')</script>`, true},
		{`<script>document.write('<img alt="\uD83D\uDE00 src=http://x>')</script>`, false},
	} {
		require.Equal(t, c.want, Insecure([]byte(c.adm), HTML, DefaultLimits), "%s", c.adm)
	}
}

// TestInsecureURLSpellings: what a browser loads, however the markup spells
// it: a CR from a character reference is dropped from a URL as a tab or LF
// is; every candidate of a srcset is a URL, commas with or without space
// between them; String.fromCharCode's constant text is read as markup.
func TestInsecureURLSpellings(t *testing.T) {
	for _, c := range []struct {
		adm  string
		want bool
	}{
		{`<img src="ht&#13;tp://x/p.png">`, true},
		{`<img src="ht&#9;tp://x/p.png">`, true},
		{`<img src="ht&#13;tps://x/p.png">`, false},
		{`<img srcset="https://a/x.png 1x,http://b/y.png 2x">`, true},
		{`<img srcset="https://a/x.png 1x, http://b/y.png 2x">`, true},
		{`<img srcset=" ,https://a/x.png 1x , https://b/y.png 2x">`, false},
		{`<script>document.write(String.fromCharCode(60,105,109,103,32,115,114,99,61,104,116,116,112,58,47,47,120,47,112,46,112,110,103,62))</script>`, true},
		{`<script>document.write(String.fromCodePoint(60,105,109,103,32,115,114,99,61,104,116,116,112,58,47,47,120,47,112,46,112,110,103,62))</script>`, true},
	} {
		require.Equal(t, c.want, Insecure([]byte(c.adm), HTML, DefaultLimits), "%s", c.adm)
	}
}
