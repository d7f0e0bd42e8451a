package gates

import (
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// TestURLSafetyURLs judges URLs as a bidder may spell them: unsafe ones in
// creative spellings, and safe lookalikes of each.
func TestURLSafetyURLs(t *testing.T) {
	g := mustGate(t, "urlSafety", "").(*urlSafety)
	unsafe, safe := 0, 0
	f := func(u, want string) {
		t.Helper()
		got := urlWhyText[g.judge(u)]
		require.Equal(t, want, got, u)
		if want == "" {
			safe++
		} else {
			unsafe++
		}
	}
	// Not an absolute https URL.
	f("http://win.dsp.example/w?p=${AUCTION_PRICE}", "scheme not https")
	f("HTTP://win.dsp.example/", "scheme not https")
	f("javascript:alert(document.domain)", "scheme not https")
	f("data:text/html;base64,PHNjcmlwdD4=", "scheme not https")
	f("ftp://files.dsp.example/a.png", "scheme not https")
	f("//win.dsp.example/w", "not absolute")
	f("/win?id=1", "not absolute")
	f("win.dsp.example/w", "not absolute")
	f("${NURL}", "not absolute")
	f("https ://win.dsp.example/", "space")
	// Userinfo, also behind a backslash that other parsers do not read as '/'.
	f("https://user:secret@win.dsp.example/", "userinfo")
	f(`https://win.dsp.example\@10.0.0.1/`, "userinfo")
	f(`https://win.dsp.example\\@127.0.0.1/w`, "userinfo")
	f("https://@127.0.0.1/", "userinfo")
	f("https:@win.dsp.example", "userinfo")
	// Characters and length.
	f("https://win.dsp.example/w?id=1\r\nX-Injected: 1", "control character")
	f("https://win.dsp.example/\tw", "control character")
	f("https://win.dsp.example/w?x=\u0085", "control character")
	f("https://win.dsp.example/w?x=a b", "space")
	f("https://win.dsp.example/w?x=a\u00a0b", "space")
	f(" https://win.dsp.example/", "space")
	f(longURL(8193), "too long")
	f(longURL(1<<20), "too long")
	// IPv4 in every WHATWG spelling.
	f("https://127.0.0.1/win", "loopback address")
	f("https://2130706433/", "loopback address")
	f("https://0177.0.0.1/", "loopback address")
	f("https://0x7f000001/", "loopback address")
	f("https://0X7F.0.0.1/", "loopback address")
	f("https://127.1/", "loopback address")
	f("https://0x7f.1/", "loopback address")
	f("https://017700000001/", "loopback address")
	f("https://127.0.0.1.:8443/", "loopback address")
	f("https://%31%32%37.0.0.1/", "loopback address")
	f("https://127%2e0%2e0%2e1/", "loopback address")
	f("https://１２７．０．０．１/", "loopback address")
	f("https:10.0.0.1/win", "private address")
	f(`https:\\10.0.0.1\win`, "private address")
	f("HTTPS://10.1.2.3:8080/admin", "private address")
	f("https://192.168.1.1/", "private address")
	f("https://172.31.255.255/", "private address")
	f("https://169.254.169.254/latest/meta-data/", "link-local address")
	f("https://100.64.0.1/", "shared address")
	f("https://0.0.0.0/", "reserved address")
	f("https://0/", "reserved address")
	f("https://255.255.255.255/", "reserved address")
	f("https://198.18.0.1/", "reserved address")
	f("https://192.0.2.10/", "reserved address")
	f("https://224.0.0.251/", "multicast address")
	// IPv6, with IPv4 embedded in every position.
	f("https://[::1]/", "loopback address")
	f("https://[0:0:0:0:0:0:0:1]:443/", "loopback address")
	f("https://[::]/", "reserved address")
	f("https://[::ffff:127.0.0.1]/", "embedded private address")
	f("https://[::FFFF:7f00:1]/", "embedded private address")
	f("https://[::ffff:169.254.169.254]/", "embedded private address")
	f("https://[::10.0.0.1]/", "embedded private address")
	f("https://[64:ff9b::192.168.0.1]/", "embedded private address")
	f("https://[64:ff9b:1::a9fe:a9fe]/", "embedded private address")
	f("https://[64:ff9b:1:7f00:1::]/", "embedded private address")
	f("https://[2002:c0a8:0101::1]/", "embedded private address")
	f("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "embedded private address")
	f("https://[2001:0:0a00:0001::1:1]/", "embedded private address")
	f("https://[fe80::1%25eth0]/", "link-local address")
	f("https://[fc00::1]/", "private address")
	f("https://[fd12:3456:789a::1]/", "private address")
	f("https://[fec0::1]/", "private address")
	f("https://[ff02::1]/", "multicast address")
	f("https://[2001:db8::1]/", "reserved address")
	// Internal names.
	f("https://localhost/", "internal name")
	f("https://LOCALHOST./win", "internal name")
	f("https://api.localhost/", "internal name")
	f("https://printer.local/", "internal name")
	f("https://metadata.google.internal/computeMetadata/v1/", "internal name")
	f("https://kubernetes/", "internal name")
	f("https://ｌｏｃａｌｈｏｓｔ/", "internal name")
	f("https://%6c%6f%63%61%6c%68%6f%73%74/", "internal name")
	f("https://localhost.localdomain/", "internal name")
	f("https://www.localhost.localdomain./", "internal name")
	f("https://home.arpa/", "internal name")
	f("https://router.home.arpa/admin", "internal name")
	f("https://HOME.ARPA./", "internal name")
	f("https://redis.default.svc/", "internal name")
	f("https://api.kube-system.svc:6443/", "internal name")
	f("https://redis.default.svc.cluster.local/", "internal name")
	f("https://cluster.local/", "internal name")
	// Wildcard DNS that answers with loopback or the address in the name.
	f("https://nip.io/", "internal name")
	f("https://127.0.0.1.nip.io/win", "internal name")
	f("https://10.0.0.1.NIP.IO./", "internal name")
	f("https://app.169.254.169.254.nip.io/", "internal name")
	f("https://sslip.io/", "internal name")
	f("https://10-0-0-1.sslip.io/", "internal name")
	f("https://xip.io/", "internal name")
	f("https://192.168.1.1.xip.io/", "internal name")
	f("https://localtest.me/", "internal name")
	f("https://win.localtest.me/", "internal name")
	f("https://lvh.me/", "internal name")
	f("https://a.b.lvh.me:8443/", "internal name")
	f("https://127.0.0.1.nip%2eio/", "internal name")
	f("https://１２７．０．０．１．ｎｉｐ．ｉｏ/", "internal name")
	// Hosts that cannot be judged.
	f("https://win.dsp.example.256/", "bad host")
	f("https://1.2.3.4.5/", "bad host")
	f("https://08.0.0.1/", "bad host")
	f("https://256.0.0.1/", "bad host")
	f("https://${AUCTION_AD_ID}/win", "bad host")
	f("https://win-${AUCTION_SEAT_ID}.dsp.example/w", "bad host")
	f("https://win.dsp.example:99999/", "bad host")
	f("https://win.dsp.example:8o/", "bad host")
	f("https://[::1/", "bad host")
	f("https://[1:2:3:4:5:6:7:8:9]/", "bad host")
	f("https:///", "bad host")
	f("https://win..dsp.example/", "bad host")
	f("https://%zz.dsp.example/", "bad host")
	f("https://[2606:4700::1111%25eth0]/", "bad host")

	// Safe lookalikes.
	f("https://win.dsp-one.example/win?id=b1&p=${AUCTION_PRICE}", "")
	f("https://10.example.com/", "")
	f("https://localhost.example.com/", "")
	f("https://127.0.0.1.example.com/", "")
	f("https://0x7f.example.com/", "")
	f("https://local.dsp.example/", "")
	f("https://internal.dsp.example/px", "")
	f("https://notnip.io/", "")
	f("https://nip.io.example.com/", "")
	f("https://127.0.0.1.nip.io.example.com/", "")
	f("https://nip.iox/", "")
	f("https://ip.io/", "")
	f("https://mysslip.io/", "")
	f("https://sslip.io.dsp.example/", "")
	f("https://xxip.io/", "")
	f("https://notlocaltest.me/", "")
	f("https://localtest.me.example.com/", "")
	f("https://flvh.me/", "")
	f("https://lvh.me.example/", "")
	f("https://home.arpa.example.com/", "")
	f("https://myhome.arpa/", "")
	f("https://localhost.localdomain.example.com/", "")
	f("https://notlocalhost.localdomain/", "")
	f("https://svc.dsp.example/", "")
	f("https://win.svc.dsp.example/", "")
	f("https://win.mysvc/", "")
	f("https://cluster.local.example.com/", "")
	f("https://1e100.net/", "")
	f("https://[2001:4860::1]/", "")
	f("https://[2001:4860:4860::8888]:443/", "")
	f("https://[2606:4700::1111]/", "")
	f("https://[::ffff:8.8.8.8]/", "")
	f("https://[64:ff9b::8.8.8.8]/", "")
	f("https://[2002:0808:0808::1]/", "")
	f("https://8.8.8.8/", "")
	f("https://1.1.1.1:443/px", "")
	f("https://11.0.0.1/", "")
	f("https://172.32.0.1/", "")
	f("https://100.128.0.1/", "")
	f("https://169.255.0.1/", "")
	f("https://192.169.0.1/", "")
	f("https://192.0.3.1/", "")
	f("https://198.20.0.1/", "")
	f("https://223.255.255.255/", "")
	f("https://win.dsp.example/redirect?to=http://127.0.0.1/", "")
	f("https://win.dsp.example/@127.0.0.1", "")
	f("https://win.dsp.example/w?u=user@brand.example", "")
	f("https://win.dsp.example#@10.0.0.1", "")
	f(`https://win.dsp.example/path\with@backslash`, "")
	f("https://win.dsp.example:8443/w", "")
	f("https://WIN.DSP.EXAMPLE./W", "")
	f("https://xn--bcher-kva.example/", "")
	f("https://bücher.example/", "")
	f("https://cdn_1.dsp.example/", "")
	f("https://win.dsp.example/w?p=%24%7BAUCTION_PRICE%7D", "")
	f("https://win.dsp.example/w?p=${AUCTION_PRICE:B64}&l=${AUCTION_LOSS}", "")
	f(longURL(2049), "")
	f(longURL(8000), "")
	f(longURL(8192), "")
	require.GreaterOrEqual(t, unsafe, 30)
	require.GreaterOrEqual(t, safe, 30)
}

func TestURLSafetyAllowHTTPAndExtraNames(t *testing.T) {
	g := mustGate(t, "urlSafety", `{allowHttp: true, extraInternalNames: [corp.exchange.example, "Intranet"]}`).(*urlSafety)
	f := func(u, want string) {
		t.Helper()
		require.Equal(t, want, urlWhyText[g.judge(u)], u)
	}
	f("http://win.dsp.example/w", "")
	f("HTTP://win.dsp.example/w", "")
	f("https://win.dsp.example/w", "")
	f("http://127.0.0.1/", "loopback address")
	f("ws://win.dsp.example/", "scheme not https")
	f("https://db.corp.exchange.example/", "internal name")
	f("https://corp.exchange.example./", "internal name")
	f("https://intranet.dsp.example/", "")
	f("https://www.intranet/", "internal name")
	f("https://notcorp.exchange.example/", "")

	configError(t, "urlSafety", `{extraInternalNames: [""]}`, `extraInternalNames[0] "" is empty`)
	configError(t, "urlSafety", `{extraInternalNames: [ok.example, "a b"]}`, `extraInternalNames[1] "a b" is not a domain name`)
	configError(t, "urlSafety", `{allowHTTP: true}`, `unknown option "allowHTTP"`)
	configError(t, "urlSafety", `{maxUrlBytes: 0}`, `maxUrlBytes must be > 0, got 0`)
	configError(t, "urlSafety", `{maxUrlBytes: -1, extraInternalNames: [""]}`, `maxUrlBytes must be > 0, got -1`)
}

func TestURLSafetyMaxURLBytes(t *testing.T) {
	g := mustGate(t, "urlSafety", `{maxUrlBytes: 100}`).(*urlSafety)
	require.Equal(t, "", urlWhyText[g.judge(longURL(100))])
	require.Equal(t, "too long", urlWhyText[g.judge(longURL(101))])
	// Length comes before the characters.
	require.Equal(t, "too long", urlWhyText[g.judge(longURL(101)+"\x00")])
	g = mustGate(t, "urlSafety", `{maxUrlBytes: 65536}`).(*urlSafety)
	require.Equal(t, "", urlWhyText[g.judge(longURL(65536))])
	require.Equal(t, "too long", urlWhyText[g.judge(longURL(65537))])
}

// longURL is a safe win notice URL of n bytes, padded in its query as an
// exchange's encrypted context would be.
func longURL(n int) string {
	const head = "https://win.dsp.example/w?ctx="
	return head + strings.Repeat("Qk", n)[:n-len(head)]
}

func TestURLSafetyCheckBid(t *testing.T) {
	g := mustGate(t, "urlSafety", "").(*urlSafety)
	req := `{"id":"r","imp":[{"id":"1","banner":{"w":1,"h":1}}]}`
	f := func(bid, reason string) {
		t.Helper()
		in, release := secureInput(t, []byte(req), []byte(`{"id":"r","seatbid":[{"bid":[`+bid+`]}]}`))
		defer release()
		require.Empty(t, g.Prepare(in))
		v := g.CheckBid(in, &in.Bids[0])
		if reason == "" {
			require.False(t, v.Failed(), bid)
			return
		}
		require.True(t, v.Failed(), bid)
		require.Equal(t, reason, v.Reason)
		require.Equal(t, 3, v.Loss)
		require.Equal(t, 300, v.NBR)
	}
	f(`{"id":"b","impid":"1","price":1}`, "")
	f(`{"id":"b","impid":"1","price":1,"nurl":"","adm":"<img src=http://10.0.0.1/>"}`, "")
	f(`{"id":"b","impid":"1","price":1,"nurl":"https://10.0.0.1/","burl":"http://b.example/"}`, "unsafe url in nurl: private address")
	f(`{"id":"b","impid":"1","price":1,"nurl":"https://w.example/","burl":"http://b.example/","lurl":"https://localhost/"}`, "unsafe url in burl: scheme not https")
	f(`{"id":"b","impid":"1","price":1,"lurl":"https://[::1]/l","iurl":"https://i.example/"}`, "unsafe url in lurl: loopback address")
	f(`{"id":"b","impid":"1","price":1,"iurl":"https://w.example\\@127.0.0.1/"}`, "unsafe url in iurl: userinfo")
	f(`{"id":"b","impid":"1","price":1,"nurl":"https://w.example/\u0000"}`, "unsafe url in nurl: control character")
	f(`{"id":"b","impid":"1","price":1,"nurl":"https://w.example/","burl":"https://b.example/","lurl":"","iurl":"http://i.example/"}`, "unsafe url in iurl: scheme not https")
	f(`{"id":"b","impid":"1","price":1,"nurl":"https://w.example/","burl":"https://b.example/","lurl":"https://l.example/","iurl":"https://i.example/"}`, "")
}

func TestURLSafetyRegistered(t *testing.T) {
	fa, ok := Builtin()["urlSafety"]
	require.True(t, ok)
	require.Equal(t, "rtb.url-safety", fa.ResultName)
	require.Equal(t, engine.PerBid, fa.Kind)
}

func BenchmarkURLSafety(b *testing.B) { benchBidGate(b, mustGate(b, "urlSafety", "")) }

// BenchmarkURLSafetyHosts measures one URL per host kind.
func BenchmarkURLSafetyHosts(b *testing.B) {
	g := mustGate(b, "urlSafety", "").(*urlSafety)
	for _, u := range []string{
		"https://win.dsp-one.example/win?id=b1&p=${AUCTION_PRICE}",
		"https://8.8.8.8/w", "https://[2606:4700::1111]/w", "https://%31%32%37.0.0.1/",
	} {
		b.Run(u, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.judge(u)
			}
		})
	}
}
