package markup

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/jsonraw"
	"github.com/stretchr/testify/require"
)

// nativeCall is one string a native reading read: its decoded value, key
// and parent.
type nativeCall struct {
	s           string
	key, parent nativeName
}

// nativeOutcome is everything a native reading leaves in its analysis.
type nativeOutcome struct {
	found    Finding
	insecure bool
	budget   int
	calls    []nativeCall
	scripts  []string
}

// readNativeBy reads b as native JSON with a fresh analysis, by the fast
// walk or the reference; ok is false when the fast walk declined it.
func readNativeBy(b []byte, fast, judge, secure, trailingOK, seen bool) (o nativeOutcome, ok bool) {
	a := newAnalysis(DefaultLimits, judge, secure)
	a.observe = func(src []byte, _ bool) { o.scripts = append(o.scripts, string(src)) }
	w := nativeWalk{a: a}
	if seen {
		w.seen = func(s []byte, key, parent nativeName) {
			o.calls = append(o.calls, nativeCall{string(s), key, parent})
		}
	}
	ok = true
	if fast {
		ok = w.fast(b, trailingOK)
	} else {
		w.reference(b, trailingOK)
	}
	o.found, o.insecure, o.budget = a.result(), a.insecure, *a.budget
	return o, ok
}

// checkNativeFast reads b both ways, for Judge, Insecure and both, with and
// without trailing bytes allowed, and requires the fast walk to leave what
// the reference leaves, string for string, whenever it accepts b. It
// reports whether it accepted b.
func checkNativeFast(t *testing.T, b []byte) bool {
	t.Helper()
	accepted := false
	for _, m := range []struct{ judge, secure bool }{{true, false}, {false, true}, {true, true}} {
		for _, trailingOK := range []bool{false, true} {
			want, _ := readNativeBy(b, false, m.judge, m.secure, trailingOK, true)
			got, ok := readNativeBy(b, true, m.judge, m.secure, trailingOK, true)
			quiet, okQuiet := readNativeBy(b, true, m.judge, m.secure, trailingOK, false)
			require.Equal(t, ok, okQuiet, "%q", b)
			if !ok {
				require.Equal(t, nativeOutcome{budget: DefaultLimits.MaxDecodedBytes}, got, "the fast walk declined %q but read it", b)
				require.False(t, firstValueValid(b), "the fast walk declined valid JSON %q", b)
				continue
			}
			accepted = true
			require.Equal(t, want, got, "%q (judge %v, secure %v, trailingOK %v)", b, m.judge, m.secure, trailingOK)
			want.calls = nil
			require.Equal(t, want, quiet, "%q without the hook (judge %v, secure %v, trailingOK %v)", b, m.judge, m.secure, trailingOK)
		}
	}
	return accepted
}

// firstValueValid reports whether the fast walk must accept b: only white
// space, or a first value that is an object or array jsonraw validates, or
// one other value alone.
func firstValueValid(b []byte) bool {
	i := jsonraw.SkipSpace(b, 0)
	if i == len(b) {
		return true
	}
	end := len(b)
	if b[i] == '{' || b[i] == '[' {
		d := json.NewDecoder(bytes.NewReader(b[i:]))
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return false
		}
		end = i + int(d.InputOffset())
	}
	_, err := jsonraw.Validate(b[:end])
	return err == nil
}

// nativeInputs are the inputs the equivalence is checked on: every adm
// and every whole file of the gates' golden pairs, every string literal of
// this package's tests, this package's fuzz corpora, and the cases below.
func nativeInputs(t testing.TB) [][]byte {
	var out [][]byte
	add := func(s string) { out = append(out, []byte(s)) }
	for _, s := range []string{
		``, ` `, "\t\n", `{}`, `[]`, `{} `, "{}\u00a0", "{}\u0085", "{}\v", "{}\f", `{}{}`, `{} x`, `[] ]`, `{}]`,
		`"x"`, `1`, `1 2`, `"x" {"imptrackers":["http://a"]}`, `1{"imptrackers":["http://a"]}`, `null`, ` true `, `tru`,
		`{"native":{"imptrackers":["http://a"]}}`, `{"imptrackers":["http://a"]}`, `[{"imptrackers":["http://a"]}]`,
		`{"native":{"link":{"url":"javascript:top.location='u'","fallback":"http://a","clicktrackers":["javascript:top.location=1"]}}}`,
		`{"native":{"assets":[{"img":{"url":"javascript:top.location=1"}}],"eventtrackers":[{"event":1,"method":1,"url":"http://a"}]}}`,
		`{"js\u0074racker":"<script>top.location=1</script>"}`, `{"jstracker":"\u003cscript\u003etop.location=1\u003c/script\u003e"}`,
		`{"imptrackers":["\u0068ttp://a"]}`, `{"imptrackers":["h\ttp://a"]}`, `{"imptrackers":["\thttp://a"]}`,
		`{"imptrackers":["http:\/\/a"]}`, `{"imptrackers":["&#104;ttp://a"]}`, `{"imptrackers":["%68ttp://a"]}`,
		"{\"imptrackers\":[\"http://a\xff\"]}", "{\"imp\xfftrackers\":[\"http://a\"]}", "{\"jstracker\":\"<img src=\xff onerror=top.location=1>\"}",
		`{"imptrackers":["\ud800http://a"]}`, `{"url":"\udc00\ud800"}`, `{"img":{"url":"http://a","url":"https://b"}}`,
		`{"img":{"w":1,"url":"http://a"}}`, `{"img":{"url":1,"x":"http://a"}}`, `{"img":[{"url":"http://a"}]}`,
		`{"imptrackers":[["http://a"]]}`, `{"link":{"url":"http://a"},"url":"http://b"}`, `{"IMPTRACKERS":["http://a"]}`,
		`{"imptrackers":[1,true,null,-0.5e+3,"http://a"]}`, `{"imptrackers":["http://a"]} <script>top.location=1</script>`,
		`{"imptrackers":["http://a"]`, `{"imptrackers":["http://a",]}`, `{"a":1e400,"imptrackers":["http://a"]}`,
		`{"vasttag":"<VAST><Ad><InLine><Impression>http://a</Impression></InLine></Ad></VAST>"}`,
		`{"video":{"vasttag":"<VAST><Ad><InLine><Impression>javascript:top.location=1</Impression></InLine></Ad></VAST>"}}`,
		`{"jstracker":"<script>top.location=1</script>","imptrackers":["http://a"]} junk`,
		"\ufeff{\"imptrackers\":[\"http://a\"]}", `{"jstracker":"` + strings.Repeat(`\"`, 100) + `"}`,
		strings.Repeat("[", 1000) + `"http://a"` + strings.Repeat("]", 1000),
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
		`{"imptrackers":` + strings.Repeat("[", 999) + `"http://a"` + strings.Repeat("]", 999) + `}`,
	} {
		add(s)
	}
	// The gates' golden pairs: each file is JSON, and its adms native or not.
	for _, g := range goldenFiles(t) {
		out = append(out, g.data)
		eachString(g.v, false, func(key, s string) {
			if key == "adm" {
				add(s)
			}
		})
	}
	// This package's test inputs and fuzz corpora.
	for _, s := range append(testLiterals(t), fuzzCorpus(t)...) {
		add(s)
	}
	return out
}

// nativeWrapped puts s, as the raw contents of a JSON string, where the
// native reading reads strings, so that fuzzed bytes reach the decoding
// and the URL and markup readers.
func nativeWrapped(s []byte) []byte {
	q := string(s)
	return []byte(`{"native":{"ver":"1.2","assets":[{"img":{"url":"` + q + `"}},{"video":{"vasttag":"` + q + `"}}],` +
		`"link":{"url":"` + q + `","clicktrackers":["` + q + `"]},"imptrackers":["` + q + `"],"jstracker":"` + q + `",` +
		`"eventtrackers":[{"event":1,"method":1,"url":"` + q + `"}]}}`)
}

// TestNativeFastAgainstReference: on every input, the fast walk reads what
// encoding/json's reading reads, and it takes every native adm of the
// golden pairs.
func TestNativeFastAgainstReference(t *testing.T) {
	inputs := nativeInputs(t)
	accepted := 0
	for _, b := range inputs {
		if checkNativeFast(t, b) {
			accepted++
		}
		checkNativeFast(t, nativeWrapped(b))
	}
	t.Logf("%d inputs, %d read by the fast walk", len(inputs), accepted)
	for _, s := range []string{distinctNative, `{"native":{"jstracker":"<script>top.location='u'</script>"}}`} {
		require.True(t, checkNativeFast(t, []byte(s)), s)
	}
}

// FuzzNativeFast: on any input, and on the input as the strings of a
// native document, the fast walk reads what encoding/json's reading reads.
func FuzzNativeFast(f *testing.F) {
	for _, b := range nativeInputs(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkNativeFast(t, b)
		checkNativeFast(t, nativeWrapped(b))
	})
}

func TestNativeNames(t *testing.T) {
	for n := nameNone + 1; int(n) < len(nativeNames); n++ {
		name := nativeNames[n]
		require.Equal(t, n, nativeNameOf(name))
		require.Equal(t, n, nativeNameOf([]byte(name)))
		require.Equal(t, nameNone, nativeNameOf(strings.ToUpper(name)))
		require.Equal(t, nameNone, nativeNameOf(name+" "))
	}
	require.Equal(t, nameNone, nativeNameOf(""))
}

// nativeEscaped is distinctNative as encoders that escape slashes and
// non-ASCII write it: every URL goes through the decoding buffer.
var nativeEscaped = strings.NewReplacer("://", `\u003a\/\/`, "/", `\/`).Replace(distinctNative)

// BenchmarkNativeReadings compares the two native readings on the load
// harness's native adm (plain, and with every string escaped): the fast
// walk over jsonraw and encoding/json's Decoder.Token, for Read (Judge and
// Insecure at once).
func BenchmarkNativeReadings(b *testing.B) {
	for _, c := range []struct{ name, adm string }{{"plain", distinctNative}, {"escaped", nativeEscaped}} {
		adm := []byte(c.adm)
		for _, fast := range []bool{true, false} {
			name := c.name + "/reference"
			if fast {
				name = c.name + "/fast"
			}
			b.Run(name, func(b *testing.B) {
				a := newAnalysis(DefaultLimits, true, true)
				b.ReportAllocs()
				b.SetBytes(int64(len(adm)))
				for b.Loop() {
					a.found, a.insecure = 0, false
					w := nativeWalk{a: a}
					if !fast {
						w.reference(adm, false)
					} else if !w.fast(adm, false) {
						b.Fatal("declined")
					}
					if a.found != 0 || a.insecure {
						b.Fatal("flagged")
					}
				}
			})
		}
	}
}
