package gates

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestPIIMatch(t *testing.T) {
	all := &pii{email: true, ssn: true, phone: true}
	f := func(s, want string) {
		t.Helper()
		require.Equal(t, want, all.match([]byte(s)), "%q", s)
	}
	// email
	f("contact jane.doe@example.com today", reasonEmail)
	f("a+b%c@mail-server.co.uk", reasonEmail)
	f("x@y.io", reasonEmail)
	f("x@y.c", "")
	f("@example.com", "")
	f("user@localhost", "")
	f("css: a{}@media screen", "")
	// retina image names are not addresses
	f("logo@2x.png", "")
	f(`<img src="logo@2x.png" srcset="hero@3x.webp 3x, icon@10x.avif">`, "")
	f("logo@2x.pngs", reasonEmail)
	f("logo@2x.png.evil.com", reasonEmail)
	f("logo@x.png", reasonEmail)
	f("logo@2X.PNG", reasonEmail)
	f("logo@2x.png and bob@corp.com", reasonEmail)
	// SSN with part checks
	f("ssn 123-45-6789", reasonSSN)
	f("000-12-3456", "")
	f("666-12-3456", "")
	f("900-12-3456", "")
	f("999-12-3456", "")
	f("123-00-4567", "")
	f("123-45-0000", "")
	f("899-45-0001", reasonSSN)
	f("a123-45-6789", "")
	f("123-45-67890", "")
	f("1123-45-6789", "")
	f("123-45-6789_", "")
	f("id=123-45-6789;", reasonSSN)
	f("000-12-3456 then 123-45-6789", reasonSSN)
	// US phone
	f("(555) 867-5309", reasonPhone)
	f("+1-800-555-0100", reasonPhone)
	f("555.867.5309", reasonPhone)
	f("call 1 555 867 5309", reasonPhone)
	f("tel:+15558675309", "")
	f("5558675309", "")
	f("155-867-5309", "")
	f("x(555) 867-5309", reasonPhone)
	f("555 867 53090", "")
	f("555-867-5309x", "")
	f("2555 867 5309", "")
	f("Duration 00:00:15, 300x250", "")
	// order: email, then SSN, then phone
	f("555-867-5309 or 123-45-6789", reasonSSN)
	f("123-45-6789 a@b.co", reasonEmail)
}

func TestPIIOptions(t *testing.T) {
	s := []byte("a@b.co 123-45-6789 (555) 867-5309")
	require.Equal(t, reasonEmail, (&pii{email: true, ssn: true, phone: true}).match(s))
	require.Equal(t, reasonSSN, (&pii{ssn: true, phone: true}).match(s))
	require.Equal(t, reasonPhone, (&pii{phone: true}).match(s))
	require.Equal(t, "", (&pii{}).match(s))
	require.Equal(t, "", (&pii{email: true}).match([]byte("123-45-6789")))

	g, err := buildGateEnv(t, piiFactory, "", engine.Env{})
	require.NoError(t, err)
	require.Equal(t, &pii{email: true, ssn: true, phone: true, limit: scanLimit{maxNodes: 10000}}, g)
	g, err = buildGateEnv(t, piiFactory, "phone: false, maxNodes: 50, onScanLimit: pass", engine.Env{})
	require.NoError(t, err)
	require.Equal(t, &pii{email: true, ssn: true, limit: scanLimit{maxNodes: 50, pass: true}}, g)
	_, err = buildGateEnv(t, piiFactory, "maxNodes: -1", engine.Env{})
	require.ErrorContains(t, err, "maxNodes must be > 0")
	_, err = buildGateEnv(t, piiFactory, "onScanLimit: skip", engine.Env{})
	require.ErrorContains(t, err, "onScanLimit must be fail or pass")
	_, err = buildGateEnv(t, piiFactory, "creditCard: true", engine.Env{})
	require.ErrorContains(t, err, `unknown option "creditCard"`)
}

// The plain regexes of gates/README.md and their documented post-checks: the
// reference the candidate-first matcher must agree with.
var (
	refEmail  = regexp.MustCompile(`[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}`)
	refRetina = regexp.MustCompile(`^[0-9]+x\.(?:png|jpg|jpeg|gif|webp|svg|avif)$`)
	refSSN    = regexp.MustCompile(`\b(\d{3})-(\d{2})-(\d{4})\b`)
	refPhone  = regexp.MustCompile(`\b(?:\+?1[-.\s]?)?\(?[2-9]\d{2}\)?[-.\s]\d{3}[-.\s]\d{4}\b`)
)

func refPII(s []byte, email, ssn, phone bool) string {
	if email {
		for _, m := range refEmail.FindAllIndex(s, -1) {
			match := s[m[0]:m[1]]
			at := 0
			for match[at] != '@' {
				at++
			}
			if !refRetina.Match(match[at+1:]) {
				return reasonEmail
			}
		}
	}
	if ssn {
		for _, m := range refSSN.FindAllSubmatch(s, -1) {
			area, group, serial := string(m[1]), string(m[2]), string(m[3])
			if area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000" {
				return reasonSSN
			}
		}
	}
	if phone && refPhone.Match(s) {
		return reasonPhone
	}
	return ""
}

func checkPIIDifferential(t *testing.T, s []byte) {
	t.Helper()
	for mask := 1; mask < 8; mask++ {
		g := &pii{email: mask&1 != 0, ssn: mask&2 != 0, phone: mask&4 != 0}
		want := refPII(s, g.email, g.ssn, g.phone)
		if got, before := g.match(s), matchBefore(g, s); got != want || before != want {
			t.Fatalf("%q with email=%v ssn=%v phone=%v: got %q, the matcher before %q, the plain regexes say %q", s, g.email, g.ssn, g.phone, got, before, want)
		}
	}
}

var piiSeeds = []string{
	"jane.doe@example.com", "logo@2x.png", "logo@2x.png.x.com", "a@b.co.x@c.de", "x@y@z.com", "a@-.co",
	"a@b..cc", "a@.cc", "a@b.c0m.io", "a.@b.cd", "@@a.bc", "a@2x.png@b.cd", "a@12x.jpeg", "a@1x.svgz",
	"123-45-6789", "000-12-3456", "987-65-4321", "123-45-6789-12-3456", "x123-45-6789", "123-45-678",
	"(555) 867-5309", "+1-800-555-0100", "555.867.5309", "1(555)867-5309", "+1 (555) 867 5309",
	"a(555) 867-5309", "_555 867 5309", "1555 867 5309", "+1555.867.5309", "1-555-867-5309x",
	"(155) 867-5309", "555)-867-5309", "(555 867 5309", "555\t867\n5309", "555\v867 5309", "\f555 867 5309",
	"é555 867 5309", "5 555 867 5309", "11 555 867 5309", "+11555 867 5309",
	"a@b.cd", "a@b.c", "12-345-6789", "x123-45-6789-", "234 567 8901", "234 567 890",
}

// FuzzPIIDifferential checks that the candidate-first matcher gives the
// verdicts of the plain regexes for every option combination.
func FuzzPIIDifferential(f *testing.F) {
	for _, s := range piiSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { checkPIIDifferential(t, s) })
}

// TestPIIDifferentialRandom runs the differential check on random strings
// over the characters that matter, so every `go test` covers it.
func TestPIIDifferentialRandom(t *testing.T) {
	const alphabet = "0123456789012345678901234567890123456789-.-. ()+@@xX_aZp\t\ne\xc3\xa9"
	words := []string{"png", "jpg", "webp", "co", "com", "1", "(5", "555", "867", "5309", "123", "45", "6789", "000", "666", "9"}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, 40)
	for n := 0; n < 200000; n++ {
		buf = buf[:0]
		for k := r.IntN(24); k >= 0; k-- {
			if r.IntN(4) == 0 {
				buf = append(buf, words[r.IntN(len(words))]...)
			} else {
				buf = append(buf, alphabet[r.IntN(len(alphabet))])
			}
		}
		checkPIIDifferential(t, buf)
	}
	for _, s := range piiSeeds {
		checkPIIDifferential(t, []byte(s))
	}
}

// TestPIIMarksNeverMiss holds piiMarks and mayHoldAt to what match relies
// on: piiMarks never says false for a string holding an '@', or a '-' three
// bytes before another, at any place and length it reads; mayHoldAt is exact.
func TestPIIMarksNeverMiss(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "-@x1-\x00\xff,"
	for n := 4; n <= 16; n++ {
		for range 3000 {
			s := make([]byte, n)
			for i := range s {
				s[i] = alphabet[r.IntN(len(alphabet))]
			}
			if bytes.IndexByte(s, '@') >= 0 != mayHoldAt(s) {
				t.Fatalf("mayHoldAt(%q) = %v", s, mayHoldAt(s))
			}
		}
	}
	for n := minSSNLen; n <= maxMarkedLen; n++ {
		for range 3000 {
			s := make([]byte, n)
			for i := range s {
				s[i] = alphabet[r.IntN(len(alphabet))]
			}
			wantAt, wantDashes := bytes.IndexByte(s, '@') >= 0, false
			for h := 0; h+3 < n; h++ {
				wantDashes = wantDashes || s[h] == '-' && s[h+3] == '-'
			}
			at, dashes := piiMarks(s)
			if wantAt && !at || wantDashes && !dashes {
				t.Fatalf("piiMarks(%q) = %v, %v; want at least %v, %v", s, at, dashes, wantAt, wantDashes)
			}
		}
	}
}

func TestPIIScanTypicalPairPasses(t *testing.T) {
	requireScanPassesTypical(t, &pii{email: true, ssn: true, phone: true, limit: scanLimit{maxNodes: defaultMaxNodes}})
}

func BenchmarkPII(b *testing.B) {
	benchScanTypical(b, &pii{email: true, ssn: true, phone: true, limit: scanLimit{maxNodes: defaultMaxNodes}})
}

// BenchmarkPIIDefault is pii as the embedded config runs it (phone off).
func BenchmarkPIIDefault(b *testing.B) {
	benchScanTypical(b, &pii{email: true, ssn: true, limit: scanLimit{maxNodes: defaultMaxNodes}})
}

// BenchmarkPIIPlainRegexes is the cost the candidate-first matcher avoids:
// the plain regexes over the same strings.
func BenchmarkPIIPlainRegexes(b *testing.B) {
	ev := typicalEval(b)
	m := &regexMatcher{}
	sc := newFakeScope(&ev.In)
	b.ReportAllocs()
	for b.Loop() {
		scanResponse(sc, m, scanLimit{maxNodes: defaultMaxNodes})
	}
}

type regexMatcher struct{}

func (regexMatcher) match(s []byte) string { return refPII(s, true, true, true) }
