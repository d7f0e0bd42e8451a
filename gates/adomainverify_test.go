package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func newAdomainVerify(t testing.TB, o adomainVerifyOptions) *adomainVerify {
	t.Helper()
	g, err := adomainVerifyFactory.New(&o, engine.Env{})
	require.NoError(t, err)
	return g.(*adomainVerify)
}

func TestAdomainVerify(t *testing.T) {
	g := newAdomainVerify(t, adomainVerifyOptions{RequireAdomain: true, ExtraPlaceholders: []string{"MyAgency.io", "intranet."}})
	in := &engine.Input{Request: &openrtb2.BidRequest{}}
	require.Empty(t, g.Prepare(in))
	f := func(adomain []string, reason string) {
		t.Helper()
		v := g.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ADomain: adomain}})
		if reason == "" {
			require.False(t, v.Failed(), "%q: %s", adomain, v.Reason)
			return
		}
		require.True(t, v.Failed(), "%q", adomain)
		require.Equal(t, reason, v.Reason, "%q", adomain)
		require.Equal(t, 6, v.Loss)
		require.Equal(t, 300, v.NBR)
	}
	f([]string{"brand.com"}, "")
	f([]string{" Brand.COM ", "shop.brand.co.uk"}, "")
	f([]string{"bücher.de", "xn--bcher-kva.de", "brand.xn--p1ai"}, "")
	f([]string{"notexample.com", "example.com.au", "localhost.com"}, "")
	f(nil, "bid has no adomain")
	f([]string{}, "bid has no adomain")
	f([]string{"", " \t "}, "bid has no adomain")
	f([]string{"example.com"}, "placeholder adomain: example.com")
	f([]string{"WWW.Example.Com"}, "placeholder adomain: www.example.com")
	f([]string{"ｅｘａｍｐｌｅ.com"}, "placeholder adomain: example.com")
	f([]string{"brand.test"}, "placeholder adomain: brand.test")
	f([]string{"a.b.invalid"}, "placeholder adomain: a.b.invalid")
	f([]string{"cdn.myagency.io"}, "placeholder adomain: cdn.myagency.io")
	f([]string{"intranet"}, "placeholder adomain: intranet")
	f([]string{"example.com\x01x"}, "invalid adomain format")
	f([]string{"ads.example.com\x01"}, "invalid adomain format")
	f([]string{"https://brand.com"}, "invalid adomain format")
	f([]string{"brand.com:443"}, "invalid adomain format")
	f([]string{"brand.com/p"}, "invalid adomain format")
	f([]string{"a@brand.com"}, "invalid adomain format")
	f([]string{"bra nd.com"}, "invalid adomain format")
	f([]string{"brand.com."}, "invalid adomain format")
	f([]string{"brand"}, "invalid adomain format")
	f([]string{"xn--zz.com"}, "invalid adomain format")
	f([]string{"bü cher.de"}, "invalid adomain format")
	f([]string{"brand.com", "example.net", "bad one"}, "placeholder adomain: example.net")
	f([]string{"bad one", "example.net"}, "invalid adomain format")

	lax := newAdomainVerify(t, adomainVerifyOptions{})
	require.False(t, lax.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{}}).Failed())
	require.True(t, lax.CheckBid(in, &engine.Bid{Bid: &openrtb2.Bid{ADomain: []string{"foo.com"}}}).Failed())
}

func TestAdomainVerifyReasonIsQuoted(t *testing.T) {
	g := newAdomainVerify(t, adomainVerifyOptions{RequireAdomain: true})
	long := "a123456789b123456789c123456789d123456789e123456789f123456789.example.com"
	v := g.CheckBid(&engine.Input{}, &engine.Bid{Bid: &openrtb2.Bid{ADomain: []string{long}}})
	require.Equal(t, "placeholder adomain: "+long[:64]+"...", v.Reason)
}

func TestAdomainVerifyOptions(t *testing.T) {
	o := adomainVerifyFactory.Options().(*adomainVerifyOptions)
	require.True(t, o.RequireAdomain, "requireAdomain defaults to true")
	require.Empty(t, o.ExtraPlaceholders)

	_, err := adomainVerifyFactory.New(&adomainVerifyOptions{ExtraPlaceholders: []string{"ok.io", "", "http://x.com", "a..b"}}, engine.Env{})
	require.EqualError(t, err, `extraPlaceholders[1] "" is empty`+"\n"+
		`extraPlaceholders[2] "http://x.com" is not a domain name`+"\n"+
		`extraPlaceholders[3] "a..b" is not a domain name`)
}

func BenchmarkAdomainVerify(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	g := newAdomainVerify(b, adomainVerifyOptions{RequireAdomain: true})
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		g.Prepare(in)
		for i := range in.Bids {
			if g.CheckBid(in, &in.Bids[i]).Failed() {
				b.Fatal("typical bid rejected")
			}
		}
	}
}
