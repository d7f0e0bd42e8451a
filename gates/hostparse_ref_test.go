package gates

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// readPlainName as it was before it read eight bytes at a time: the
// reference of TestReadPlainNameDifferential and
// FuzzReadPlainNameDifferential.
func refReadPlainName(s string, buf *[maxHostBytes]byte) (n int, name []byte, ok, done bool) {
	start, long := 0, false // the label being read; a label empty or over 63 characters
	for ; n < len(s); n++ {
		c := nameByte[s[n]]
		if c == 0 {
			break
		}
		if n == len(buf) {
			return n, nil, false, false
		}
		buf[n] = c
		if c == '.' {
			long = long || n == start || n-start > maxLabelLen
			start = n + 1
		}
	}
	if n == 0 {
		return n, nil, false, false
	}
	last, size := start, n-start // the last label, one trailing dot ignored
	if size == 0 && n > 1 {
		for last = n - 1; last > 0 && buf[last-1] != '.'; last-- {
		}
		size = n - 1 - last
	}
	if size > 0 && isDigit(buf[last]) {
		return n, nil, false, false
	}
	size = n
	if buf[n-1] == '.' {
		size--
	}
	if long || n-start > maxLabelLen || size == 0 || size > maxHostnameLen {
		return n, nil, false, true
	}
	return n, buf[:n], true, true
}

func checkReadPlainName(t *testing.T, s string) {
	t.Helper()
	var buf, refBuf [maxHostBytes]byte
	n, name, ok, done := readPlainName(s, &buf)
	wn, wname, wok, wdone := refReadPlainName(s, &refBuf)
	if n != wn || ok != wok || done != wdone || !bytes.Equal(name, wname) || (name == nil) != (wname == nil) {
		t.Fatalf("readPlainName(%q) = %d, %q, %v, %v; want %d, %q, %v, %v", s, n, name, ok, done, wn, wname, wok, wdone)
	}
	// A name read is in buf's first n bytes either way.
	if ok && !bytes.Equal(buf[:n], refBuf[:n]) {
		t.Fatalf("readPlainName(%q): buf %q, want %q", s, buf[:n], refBuf[:n])
	}
}

// plainNameSeeds are hosts of every shape readPlainName tells apart, and
// what may follow them.
var plainNameSeeds = []string{
	"", "a", "win.dsp-one.com", "WIN.DSP-One.COM/win?id=1", "bill.dsp-two.com?x", "a.b#c", "a..b/", ".a/", "a./",
	"a.b.", "a.b..", "..", ".", "under_score.example", "1.2.3.4/", "a.1b", "a.b1", "xn--bcher-kva.de/", "A@B.com",
	"abcdefgh.ijklmnop.qrstuvwx.yz/", "abcdefg\x00", "abcdefgh\x80", "abc\xc3\xa9def.com", "ABCDEFGHIJKLMNOPQRSTUVWXYZ.com",
	"@[\\]^`{|}~:;<=>?/-._", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 64) + ".com", "x." + strings.Repeat("b", 64),
	strings.Repeat("ab.", 84) + "com", strings.Repeat("a", 254), strings.Repeat("a", 255), strings.Repeat("a", 256),
	strings.Repeat("a.", 127) + "b", strings.Repeat("a", 250) + ".c/x",
}

// TestReadPlainNameDifferential: readPlainName reads every seed, each of
// its prefixes, and random strings over the bytes it tells apart, as the
// byte-at-a-time reading does.
func TestReadPlainNameDifferential(t *testing.T) {
	for _, s := range plainNameSeeds {
		for i := range len(s) + 1 {
			checkReadPlainName(t, s[:i])
		}
	}
	alphabet := "aZz09-._/?#@:AYx\x00\x7f\x80\xff`{[@ "
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(300))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = "abcdefghijklmnopqrstuvwxyz"[r.IntN(26)]
			}
		}
		checkReadPlainName(t, string(b))
	}
	for c := range 256 { // every byte in every lane
		for lane := range 9 {
			b := []byte("abcdefghijklmnop")
			b[lane] = byte(c)
			checkReadPlainName(t, string(b))
		}
	}
}

func FuzzReadPlainNameDifferential(f *testing.F) {
	for _, s := range plainNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkReadPlainName(t, s) })
}
