package gates

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestContentRefusals(t *testing.T) {
	g := &content{refusals: true, phrases: newPhraseSet(append(append([]string{}, refusalPhrases...), "Je ne peux pas", "[error]", "ÉCHEC"))}
	f := func(s, phrase string) {
		t.Helper()
		want := ""
		if phrase != "" {
			want = "refusal phrase detected: " + phrase
		}
		require.Equal(t, want, g.match([]byte(s)), "%q", s)
	}
	for _, p := range refusalPhrases {
		f(p, p)
		f("Sorry. "+p+".", p)
	}
	f("As an AI language model, I cannot do that.", "as an ai language model")
	f("I CAN'T HELP with that", "i can't help")
	f("I can’t help with that", "i can't help")
	f("i  can't\n\thelp", "i can't help")
	f("i\u00a0cannot assist", "i cannot assist")
	f("I'm sorry, but I can't", "i'm sorry, but i can't")
	f("(i'm an ai)", "i'm an ai")
	f("I'm an AI-powered shop", "i'm an ai")
	// word boundaries at both ends
	f("taxi can't do", "")
	f("i can't doubt it", "")
	f("Hi can't help", "")
	f("i'm an aide", "")
	f("i can'thelp", "")
	f("As an AI modeller", "")
	f("Brand One summer sale", "")
	f("i can", "")
	f("i'm sorry, but", "")
	// the leftmost phrase wins
	f("I am unable to; as an AI model", "i am unable to")
	// extra phrases, named as listed
	f("JE NE PEUX PAS", "Je ne peux pas")
	f("an [error] occurred", "[error]")
	f("x[error]x", "[error]")
	f("échec total", "ÉCHEC")
	f("échecs", "")
}

// TestContentWordBoundaryNonASCII: a letter written in several bytes next to
// a phrase makes it part of a longer word, whatever its last byte (р is
// D1 80, א is D7 90) or first byte (D7, read alone, is ×); a non-ASCII
// symbol (« is C2 AB) is a boundary.
func TestContentWordBoundaryNonASCII(t *testing.T) {
	g := &content{refusals: true, phrases: newPhraseSet(refusalPhrases)}
	for _, s := range []string{"рi can't help", "אi can't help", "éi can't help", "i can't helpא", "i can't helpр", "i can't help中"} {
		require.Equal(t, "", g.match([]byte(s)), "%q", s)
	}
	for _, s := range []string{"«i can't help»", "—i can't help—", "\u00a0i can't help\u00a0", "中 i can't help"} {
		require.Equal(t, "refusal phrase detected: i can't help", g.match([]byte(s)), "%q", s)
	}
}

func TestNormalisePhrase(t *testing.T) {
	require.Equal(t, "i can't help", normalisePhrase("  I   Can’t\tHELP "))
	require.Equal(t, "", normalisePhrase(" \t "))
}

func TestContentOptions(t *testing.T) {
	g, err := buildGateEnv(t, contentFactory, "", engine.Env{})
	require.NoError(t, err)
	c := g.(*content)
	require.True(t, c.checkEmpty && c.refusals && c.JudgesEmpty())
	require.Equal(t, scanLimit{maxNodes: 10000}, c.limit)
	g, err = buildGateEnv(t, contentFactory, "", engine.Env{InSeat: true})
	require.NoError(t, err)
	require.False(t, g.(*content).JudgesEmpty())
	g, err = buildGateEnv(t, contentFactory, "checkEmpty: false", engine.Env{})
	require.NoError(t, err)
	require.False(t, g.(*content).JudgesEmpty())
	g, err = buildGateEnv(t, contentFactory, "extraPhrases: [Lorem Ipsum]", engine.Env{})
	require.NoError(t, err)
	require.Equal(t, "refusal phrase detected: Lorem Ipsum", g.(*content).match([]byte("lorem  ipsum dolor")))
	_, err = buildGateEnv(t, contentFactory, "extraPhrases: [ok, ' ']", engine.Env{})
	require.ErrorContains(t, err, "extraPhrases[1] must not be empty")
	_, err = buildGateEnv(t, contentFactory, "onScanLimit: maybe", engine.Env{})
	require.ErrorContains(t, err, "onScanLimit must be fail or pass")
}

func TestContentEmpty(t *testing.T) {
	g := &content{checkEmpty: true, refusals: true, phrases: newPhraseSet(refusalPhrases), limit: scanLimit{maxNodes: defaultMaxNodes}}
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	require.NoError(t, ev.DecodeResponse([]byte(`{"id":"x","seatbid":[{"bid":[]}]}`), 1000))
	sc := &fakeScope{in: &ev.In, reasons: map[int]string{}}
	g.scan(&ev.In, sc)
	require.Equal(t, map[int]string{-1: reasonEmpty}, sc.reasons)
	// A seat policy never judges emptiness.
	sc = &fakeScope{in: &ev.In, seatOnly: true, reasons: map[int]string{}}
	g.scan(&ev.In, sc)
	require.Empty(t, sc.reasons)
}

func TestContentScanTypicalPairPasses(t *testing.T) {
	requireScanPassesTypical(t, &content{checkEmpty: true, refusals: true, phrases: newPhraseSet(refusalPhrases), limit: scanLimit{maxNodes: defaultMaxNodes}})
}

func BenchmarkContent(b *testing.B) {
	benchScanTypical(b, &content{checkEmpty: true, refusals: true, phrases: newPhraseSet(refusalPhrases), limit: scanLimit{maxNodes: defaultMaxNodes}})
}

// refFind is find without its prefilters: the trie walked from every
// byte that may begin a phrase.
func refFind(ps *phraseSet, s []byte) string {
	for i := range s {
		if !ps.start[s[i]] {
			continue
		}
		if p := ps.matchAt(s, i); p >= 0 {
			return ps.reasons[p]
		}
	}
	return ""
}

var contentDiffPhrases = append(append([]string{}, refusalPhrases...), "Je ne peux pas", "[error]", "ÉCHEC", "x", "k9", "a\u00a0b")

// contentDiffSets are the phrase sets of the differential tests: the
// built-in list and sets that turn each part of find's word-at-a-time scan
// on or off (too many first bytes, first bytes that need no boundary,
// phrases that begin outside ASCII with or without a word character, a
// phrase whose text may be shorter than its bytes: Ⱥ is 2 bytes, ⱥ 3;
// every phrase holding a space or not).
var contentDiffSets = [][]string{
	refusalPhrases,
	contentDiffPhrases,
	{"[error]", "k9", "as an ai"},
	{"i can't", "«stop»", "ⱥb", "x"},
	{"_ai", "9 lives", "Éte", "K"},
	{"it' s", "[x] y", "I'M so"},                // each holds a space, after bytes outside the letters that fold
	{"a b", "C d", "e' f", "[g] h", "i\u00a0j"}, // each holds a space, after many kinds of byte
	{"a\u00a0b", "é é", "İ can"},                // each holds a space
}

func checkContentDifferential(t *testing.T, ps *phraseSet, s []byte) {
	t.Helper()
	got, old, plain := ps.find(s), findBytewise(ps, s), refFind(ps, s)
	if got != plain || old != plain {
		t.Fatalf("find(%q) = %q, the byte-wise find %q, the plain walk %q", s, got, old, plain)
	}
	// findAnchored against the word step it replaced, from every place
	// find may start it (white space before from included: both read it).
	if ps.spaced && len(s) >= 8 {
		// Every place on text of up to 1 KB, which the fuzzer mostly
		// writes; past that (each place reads the text, twice) the first
		// and last 64, and 64 between.
		folded, words := foldAnchors(ps)
		step := max(1, len(s)/64)
		for from := range s {
			if len(s) > 1<<10 && from >= 64 && from < len(s)-64 && from%step != 0 {
				continue
			}
			a, b, c := ps.findAnchored(s, from), findAnchoredWordStep(ps, s, from), findAnchoredPrevAnchors(ps, s, from, folded, words)
			if a != b || a != c {
				t.Fatalf("findAnchored(%q, %d) = %q, the word step %q, the eight-byte test of the bytes before %q", s, from, a, b, c)
			}
		}
	}
}

func TestContentDiffSetsCoverTheWordScan(t *testing.T) {
	var on, off, afterLetter int
	for _, list := range contentDiffSets {
		ps := newPhraseSet(list)
		switch {
		case !ps.wordScan:
			off++
		case ps.afterLetter:
			on++
			afterLetter++
		default:
			on++
		}
	}
	require.Equal(t, []int{6, 2, 4}, []int{on, off, afterLetter})
	require.True(t, newPhraseSet(contentDiffSets[len(contentDiffSets)-2]).spaced)
	require.True(t, newPhraseSet(contentDiffSets[len(contentDiffSets)-1]).spaced)
	require.False(t, newPhraseSet(contentDiffPhrases).spaced)
	// The test of the bytes before eight at once findAnchored had (its
	// reference findAnchoredPrevAnchors), on and off.
	var words, nowords int
	for _, list := range contentDiffSets {
		ps := newPhraseSet(list)
		if _, ok := foldAnchors(&ps); ps.spaced && ok {
			words++
		} else if ps.spaced {
			nowords++
		}
	}
	require.Equal(t, []int{3, 1}, []int{words, nowords})
	// Each kind of white space, in the first eight bytes and after them.
	spaced := newPhraseSet(contentDiffSets[len(contentDiffSets)-1])
	for _, text := range []string{"a\tb", "a\nb", "é\vé", "İ\fcan", "é\ré", "a b", "a\u00a0b", "İ\u2028can",
		"1234567-a\tb", "a\tb-1234567", "a\rb-1234567", "1234567-é\vé", "1234567-İ\u3000can", "1234567-a b"} {
		require.NotEmpty(t, spaced.find([]byte(text)), text)
		checkContentDifferential(t, &spaced, []byte(text))
	}
	// The built-in list takes the anchored scan: its phrases' parts before
	// their first space ("i", "as", "i'm") end in 'i', 's' or 'm', and span
	// at most three runes.
	builtin := newPhraseSet(refusalPhrases)
	require.True(t, builtin.spaced)
	require.Equal(t, 3*utf8.UTFMax, builtin.reach)
	var prev []byte
	for c, ok := range builtin.anchorPrev {
		if ok {
			prev = append(prev, byte(c))
		}
	}
	require.Equal(t, "IMSims", string(prev))
	// White space after another byte is no anchor; a match is found from
	// the anchor after it, its part before the space read from a rune
	// outside ASCII or past a run of white space before.
	for _, text := range []string{"<div class=\"ad\"> alt=\"Brand sale\"", "x I can’t help", "x \u212a I can't do",
		"as an AI model", "xxxxxxx\tI\u2019m an ai", "İ can't help"} {
		checkContentDifferential(t, &builtin, []byte(text))
	}
	require.Empty(t, builtin.find([]byte("<div class=\"ad\"> alt=\"Brand sale\"")))
	require.NotEmpty(t, builtin.find([]byte("xxxxxxx\tI\u2019m an ai")))
	require.NotEmpty(t, builtin.find([]byte("x\tİ can't help")))
	require.Equal(t, 9, newPhraseSet(refusalPhrases).minLen) // "i'm an ai"
}

// FuzzContentDifferential: find, the byte-wise find it replaced and the
// plain walk agree on every phrase set.
func FuzzContentDifferential(f *testing.F) {
	for _, s := range []string{"I can’t help", "taxi can't do", "İ CAN'T HELP", "x", "ax", "k9", "\u212a9", "a\u00a0b", "[error]x",
		"i\tcannot\u2028assist", "Ⱥb", "x«stop»", "12345678_ai", "ab\u00e9te i can't", "a\u00a0b", "i\u3000can"} {
		f.Add([]byte(s))
	}
	sets := make([]phraseSet, len(contentDiffSets))
	for i, list := range contentDiffSets {
		sets[i] = newPhraseSet(list)
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		for i := range sets {
			checkContentDifferential(t, &sets[i], s)
		}
	})
}

// TestContentDifferentialRandom runs the differential on text built from
// pieces of the phrases, case and white space changed, and characters that
// fold or count as words outside ASCII.
func TestContentDifferentialRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 10))
	for _, list := range contentDiffSets {
		ps := newPhraseSet(list)
		pieces := []string{" ", "\t", "\n", "\u00a0", "\u2028", "’", "'", "İ", "\u212a", "é", "É", "Ⱥ", "«", "_", "-", "(", "9", "x", "ai", "AI", "<div class=\"ad\">", "https://a.b/c?id=1"}
		for _, p := range list {
			pieces = append(pieces, p, strings.ToUpper(p), p[:len(p)/2], p[len(p)/2:])
		}
		for n := 0; n < 100_000; n++ {
			var b []byte
			for k := rng.IntN(10); k >= 0; k-- {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
			if len(b) > 0 && rng.IntN(4) == 0 {
				b = b[:rng.IntN(len(b))] // cut anywhere, UTF-8 included
			}
			checkContentDifferential(t, &ps, b)
		}
	}
}
