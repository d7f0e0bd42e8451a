package gates

import (
	"math/rand/v2"
	"strings"
	"testing"

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

// refFind is find without its ASCII prefilter: the trie walked from every
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

func checkContentDifferential(t *testing.T, ps *phraseSet, s []byte) {
	t.Helper()
	if got, want := ps.find(s), refFind(ps, s); got != want {
		t.Fatalf("find(%q) = %q, the plain walk finds %q", s, got, want)
	}
}

// FuzzContentDifferential: the prefilter never changes a verdict.
func FuzzContentDifferential(f *testing.F) {
	for _, s := range []string{"I can’t help", "taxi can't do", "İ CAN'T HELP", "x", "ax", "k9", "\u212a9", "a\u00a0b", "[error]x", "i\tcannot\u2028assist"} {
		f.Add([]byte(s))
	}
	ps := newPhraseSet(contentDiffPhrases)
	f.Fuzz(func(t *testing.T, s []byte) { checkContentDifferential(t, &ps, s) })
}

// TestContentDifferentialRandom runs the differential on text built from
// pieces of the phrases, case and white space changed, and characters that
// fold or count as words outside ASCII.
func TestContentDifferentialRandom(t *testing.T) {
	ps := newPhraseSet(contentDiffPhrases)
	rng := rand.New(rand.NewPCG(7, 10))
	pieces := []string{" ", "\t", "\n", "\u00a0", "\u2028", "’", "'", "İ", "\u212a", "é", "É", "_", "-", "(", "9", "x", "ai", "AI"}
	for _, p := range contentDiffPhrases {
		pieces = append(pieces, p, strings.ToUpper(p), p[:len(p)/2], p[len(p)/2:])
	}
	for n := 0; n < 200_000; n++ {
		var b []byte
		for k := rng.IntN(6); k >= 0; k-- {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if len(b) > 0 && rng.IntN(4) == 0 {
			b = b[:rng.IntN(len(b))] // cut anywhere, UTF-8 included
		}
		checkContentDifferential(t, &ps, b)
	}
}
