package gates

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func nativeList(s string) []string {
	var w nativeStrings
	w.reset([]byte(s))
	var out []string
	for {
		k, b, e, ok := w.next()
		if !ok {
			return out
		}
		out = append(out, [...]string{"none", "url", "html", "click"}[k]+" "+s[b:e])
	}
}

func TestNativeStrings(t *testing.T) {
	f := func(s string, want ...string) {
		t.Helper()
		require.Equal(t, want, nativeList(s), "%s", s)
	}
	// Native 1.2: no wrapper, eventtrackers.
	f(`{"ver":"1.2","assets":[{"id":1,"title":{"text":"http://not-a-url"}},{"id":2,"img":{"url":"i.png","w":1}},`+
		`{"id":3,"data":{"value":"http://text"}},{"id":4,"link":{"url":"http://click"}}],`+
		`"link":{"url":"http://click","clicktrackers":["http://ct"],"fallback":"fb"},`+
		`"eventtrackers":[{"event":1,"method":1,"url":"e1"},{"event":1,"method":2,"url":"e2"}],"privacy":"http://p"}`,
		"url i.png", "click http://click", "click http://click", "url http://ct", "click fb", "url e1", "url e2")
	// A single clicktrackers string; link objects in arrays are not links.
	f(`{"link":{"clicktrackers":"ct"},"links":[{"url":"no"}],"x":{"link":[{"url":"no"}]}}`, "url ct")
	// Native 1.0/1.1: the wrapper, imptrackers and jstracker.
	f(`{"native":{"ver":"1.1","assets":[{"img":{"url":"a"}}],"imptrackers":["t1","t2"],"jstracker":"<script src=\"j\"></script>"}}`,
		"url a", "url t1", "url t2", `html <script src=\"j\"></script>`)
	// A single imptrackers string, escaped keys, keys under other names.
	f(`{"imptrackers":"t","i\u006dg":{"url":"a"},"image":{"url":"no"},"img":[{"url":"no"}],"eventtrackers":{"url":"no"}}`,
		"url t", "url a")
	// The spec's own sample is not JSON: walked as far as it goes.
	f(`{"native":{"ver":"1.0","link":{ ... },"imptrackers":[ ... ],"assets":[ ... ]}}`)
	f(`{"imptrackers":["a", ... "b"], "img":{"url":"c"`, "url a", "url b", "url c")
	f(`{"a":"unterminated`)
	// A quote after an odd run of backslashes is escaped, after an even one it closes.
	f(`{"imptrackers":["a\\\\", "b\\\"c\\\\\"d"]}`, `url a\\\\`, `url b\\\"c\\\\\"d`)
	f(`"top"`)
	f(`]]]}}{"imptrackers":["x"]}`, "url x")
	// Values are classified by their own key: a key that names nothing is
	// reset at each comma.
	f(`{"img":{"w":1,"url":"a","h":2}, "url":"no"}`, "url a")
}

func TestNativeStringsDeep(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 40) + `"x"` + strings.Repeat(`]}`, 40)
	require.Empty(t, nativeList(deep))
	require.Equal(t, []string{"url y"}, nativeList(deep+`{"imptrackers":["y"]}`))
	// Frames past the kept depth are walked without keys.
	deeper := strings.Repeat(`[`, 20) + `{"imptrackers":["z"]}` + strings.Repeat(`]`, 20) + `{"imptrackers":["w"]}`
	require.Equal(t, []string{"url w"}, nativeList(deeper))
}

func TestNativeKeyIs(t *testing.T) {
	require.True(t, nativeKeyIs([]byte("url"), "url"))
	require.True(t, nativeKeyIs([]byte(`u\u0072l`), "url"))
	require.True(t, nativeKeyIs([]byte(`\/`), "/"))
	require.False(t, nativeKeyIs([]byte(`u\u0072lx`), "url"))
	require.False(t, nativeKeyIs([]byte(`u\u0072`), "url"))
	require.False(t, nativeKeyIs(nil, "url"))
}

func TestAppendNativeUnescaped(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		require.Equal(t, want, string(appendNativeUnescaped(nil, []byte(raw))))
	}
	f(`<script src=\"https:\/\/x\"><\/script>`, `<script src="https://x"></script>`)
	f(`\u003cimg\u003e \u00e9 \ud83d\ude00 \n\t`, "<img> é 😀 \n\t")
	f(`a\`, `a\`)
	f(`\x\u12`, `\x\u12`)
	f(`\ud83d`, "\ufffd")
}

func TestUnescapeNative(t *testing.T) {
	raw := []byte(`<img src="a">`)
	text, buf := unescapeNative(raw)
	require.Nil(t, buf)
	require.Equal(t, &raw[0], &text[0]) // no copy without escapes
	releaseUnescapedNative(buf)

	text, buf = unescapeNative([]byte(`<img src=\"a\">`))
	require.NotNil(t, buf)
	require.Equal(t, `<img src="a">`, string(text))
	releaseUnescapedNative(buf)
}
