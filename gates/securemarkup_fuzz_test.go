package gates

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/gates/markup"
)

// secureSlot is a creative with one URL replaced by a slot, and what the
// slot's content must not hold to stay inside it.
type secureSlot struct {
	name, creative, target string
	drop                   string // bytes removed from the fuzzed text
	jsonEscape             bool   // the slot is inside a JSON string
	reading                markup.Reading
}

var secureSlots = []secureSlot{
	{"img src", bannerHTML, "https://cdn.brand.example/a.jpg", `"`, false, markup.HTML},
	{"srcset", bannerHTML, "https://cdn.brand.example/a@2x.webp", "\", \t\n\r\f&", false, markup.HTML},
	{"style sheet url()", bannerHTML, "https://cdn.brand.example/bg.jpg", "\"'()\\<& \t\n\r\f", false, markup.HTML},
	{"style attribute url('')", bannerHTML, "//cdn.brand.example/body.png", "\"'\\&\n\r\f", false, markup.HTML},
	{"vast MediaFile CDATA", vast2, "https://cdn.dsp.example/v/30s.mp4", "]", false, markup.VAST},
	{"vast Error text", vast2, "https://err.dsp.example/e?code=[ERRORCODE]", "<", false, markup.VAST},
	{"vast4 Impression", vast4, "https://example.com/track/impression", "]", false, markup.VAST},
	{"native imptrackers", native11, "https://trk.verifier.example/ni", "", true, markup.Native},
	{"native jstracker src", native11, "https://trk.dsp.example/nj.js", "\"\\", true, markup.Native},
	{"native eventtrackers", native12, "https://trk.dsp.example/e1", "", true, markup.Native},
}

func (s secureSlot) fill(url string) []byte {
	if s.jsonEscape {
		b, _ := json.Marshal(url)
		url = string(b[1 : len(b)-1])
	}
	return []byte(strings.Replace(s.creative, s.target, url, 1))
}

// neutralise removes every byte that could build a scheme out of separated
// pieces (escape starts, tab/CR/LF, '!', '/', '?' that open comments, CDATA
// sections, end tags and declarations, and the quotes, '+' and parentheses
// that build a constant a script writes), then turns each "http" (any
// case) not followed by 's' into "https".
func neutralise(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("&%\\\t\r\n!/?'\"`+()", rune(s[i])) {
			b.WriteByte(s[i])
		}
	}
	t := b.String()
	b.Reset()
	for i := 0; i < len(t); i++ {
		b.WriteByte(t[i])
		if i >= 3 && strings.EqualFold(t[i-3:i+1], "http") && (i+1 == len(t) || t[i+1]|0x20 != 's') {
			b.WriteByte('s')
		}
	}
	return b.String()
}

// FuzzSecureMarkup checks, on any input:
//   - scanning never panics, in every mode, and is deterministic;
//   - upgrading: the input neutralised (see neutralise) never flags;
//   - inserting: in each slot of a realistic creative, "https://" followed by
//     the input (kept inside the slot, and valid UTF-8 in VAST) never flags, and "http://" followed by
//     the same always flags.
func FuzzSecureMarkup(f *testing.F) {
	for _, s := range []string{
		bannerHTML, vast2, vast3Wrapper, vast4, native11, native12,
		`<img src="http&#58;//x">`, `<img srcset="a 1x, http://b 2x">`, `<style>@import 'http://x'</style>`,
		`<div style="background:u\72l(h\74tp://x)">`, `{"native":{"jstracker":"<img src=\"http:\/\/x\">"}}`,
		`<VAST><Ad><InLine><Impression>ht<!-- x --><![CDATA[tp://x]]></Impression></InLine></Ad></VAST>`,
		`<img src="http://x`, `< MediaFile>http://x</MediaFile>`, `{"native":{"ver":"1.0","link":{ ... },"imptrackers":[ ... ]}}`,
		"\xef\xbb\xbf<?xml version=\"1.0\"?><VAST><Error>http%3A//x</Error></VAST>", `&#x68;ttp://x`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		insecure := func(adm []byte, r markup.Reading) bool { return markup.Insecure(adm, r, markup.DefaultLimits) }
		got := insecure(b, markup.Sniff(b))
		if insecure(b, markup.Sniff(b)) != got {
			t.Fatalf("not deterministic: %q", s)
		}
		insecure(b, markup.HTML)
		insecure(b, markup.VAST)
		insecure(b, markup.Native)
		if insecureURL(s) != markup.InsecureURL(s) {
			t.Fatalf("insecureURL(%q) is not markup.InsecureURL", s)
		}

		if n := neutralise(s); insecure([]byte(n), markup.Sniff([]byte(n))) {
			t.Fatalf("neutralised input flagged: %q", n)
		}
		for _, slot := range secureSlots {
			x := s
			for _, c := range slot.drop {
				x = strings.ReplaceAll(x, string(c), "")
			}
			if slot.reading == markup.VAST {
				// XML is UTF-8: a VAST document that is not is unreadable,
				// and an unreadable document is insecure (fail closed),
				// whatever its URLs.
				x = strings.ToValidUTF8(x, "")
			}
			if adm := slot.fill("https://" + x); insecure(adm, slot.reading) {
				t.Fatalf("%s: https URL flagged:\n%s", slot.name, adm)
			}
			if adm := slot.fill("http://" + x); !insecure(adm, slot.reading) {
				t.Fatalf("%s: http URL not flagged:\n%s", slot.name, adm)
			}
		}
	})
}
