package engine

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/jsonraw"
)

// The direct decoder against the token path (the reference it stands in
// for): a document it takes decodes to the same values, capacities and the
// elements past the length included; it declines only what the token path
// rejects or what nests deeper than maxDirectDepth; and DecodeRequest gives
// the token path's verdict and error on every document.

// checkDirect decodes data both ways and compares.
func checkDirect(t *testing.T, e *Eval, data []byte) {
	t.Helper()
	var direct, tokens messages
	defer direct.reset()
	defer tokens.reset()
	dd := directDecoder{data: data, ar: &direct.reqArena}
	derr := dd.decode(requestPlan, unsafe.Pointer(&direct.req))
	terr := tokens.decodeRequestTokens(data)
	if derr != nil {
		require.ErrorIs(t, derr, errDeclined)
		if terr == nil {
			require.Greater(t, nesting(data), maxDirectDepth, "declined a document the token path takes: %q", data)
		}
	} else {
		require.NoError(t, terr, "took a document the token path rejects: %q", data)
		require.Zero(t, dd.depth, "%q", data)
		sameDecoded(t, "request", reflect.ValueOf(&tokens.req).Elem(), reflect.ValueOf(&direct.req).Elem(), data)
	}
	err := e.DecodeRequest(data)
	if terr != nil {
		require.EqualError(t, err, terr.Error(), "%q", data)
		require.Nil(t, e.In.Request)
		return
	}
	require.NoError(t, err, "%q", data)
	if tokens.req.Regs != nil { // as DecodeRequest hands it out
		tokens.req.BidRequest.Regs = &tokens.req.Regs.Regs
	}
	sameDecoded(t, "request", reflect.ValueOf(&tokens.req).Elem(), reflect.ValueOf(&e.msgs.req).Elem(), data)
	require.Same(t, &e.msgs.req.BidRequest, e.In.Request)
}

// nesting is the deepest nesting of a document the token path took.
func nesting(data []byte) int {
	var toks []jsonraw.Token
	if _, err := jsonraw.ValidateTokens(data, &toks); err != nil {
		panic(err)
	}
	depth, most := 0, 0
	for _, t := range toks {
		switch t.Kind {
		case jsonraw.TokObject, jsonraw.TokArray:
			depth++
			most = max(most, depth)
		case jsonraw.TokClose:
			depth--
		}
	}
	return most
}

// sameDecoded requires a and b to hold the same values: nil where the
// other is nil, the same strings, numbers (to the bit) and bytes, slices of
// the same length and capacity with the same elements up to the capacity.
func sameDecoded(t *testing.T, path string, a, b reflect.Value, data []byte) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		require.Equal(t, a.IsNil(), b.IsNil(), "%s of %q", path, data)
		if !a.IsNil() {
			sameDecoded(t, path, a.Elem(), b.Elem(), data)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			sameDecoded(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i), data)
		}
	case reflect.Slice:
		require.Equal(t, a.IsNil(), b.IsNil(), "%s of %q", path, data)
		require.Equal(t, a.Len(), b.Len(), "length of %s of %q", path, data)
		require.Equal(t, a.Cap(), b.Cap(), "capacity of %s of %q", path, data)
		a, b = a.Slice(0, a.Cap()), b.Slice(0, b.Cap())
		for i := range a.Len() {
			sameDecoded(t, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), data)
		}
	case reflect.String:
		require.Equal(t, a.String(), b.String(), "%s of %q", path, data)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		require.Equal(t, a.Int(), b.Int(), "%s of %q", path, data)
	case reflect.Uint8:
		require.Equal(t, a.Uint(), b.Uint(), "%s of %q", path, data)
	case reflect.Float64:
		require.Equal(t, math.Float64bits(a.Float()), math.Float64bits(b.Float()), "%s of %q", path, data)
	default:
		t.Fatalf("%s: no comparison for %s", path, a.Type())
	}
}

func TestDirectDecoder(t *testing.T) {
	e := AcquireEval()
	defer ReleaseEval(e)
	f := func(doc string) {
		t.Helper()
		checkDirect(t, e, []byte(doc))
	}
	// Taken.
	f(`{"id":"a","imp":[{"id":"1","banner":{"w":300,"h":250,"format":[{"w":1,"h":2}]}}],"tmax":120}`)
	f(" \t\r\n{ \"id\" : \"a\" , \"imp\" : [ ] , \"at\" : -1 } \n")
	f(`{"id":"a\u00e9\n\"\\\/","imp":[{"id":"\ud83d\ude00","tagid":"\ud800"}]}`)
	f("{\"id\":\"a\xffb\",\"imp\":[{\"id\":\"\xc3\"}]}")
	f(`{"ID":"a","Imp":[{"id":"1"}],"iMP":[{"id":"2"},{"id":"3"}],"imp":[{"bidfloor":1.5}]}`)
	f(`{"imp":[{"id":"1","bidfloor":2},{"id":"2"},{"id":"3"}],"imp":[{"bidfloor":3}]}`)
	f(`{"cur":["USD","EUR","GBP"],"cur":["X"],"bcat":[],"badv":null,"wlang":["en"]}`)
	f(`{"site":{"id":"s"},"site":{"page":"p"},"site":null,"app":{"id":"x"}}`)
	f(`{"regs":{"coppa":1,"dsa":{"dsarequired":3},"ext":{"gdpr":1}},"regs":{"dsa":null}}`)
	f(`{"unknown":{"a":[1,-0,0.5e-3,1E+2,true,false,null,"x",{},[]]},"x":[[[]]],"y":"\u0000"}`)
	f(`{"tmax":-0,"at":9007199254740993,"imp":[{"bidfloor":-0.0,"exp":2147483647}]}`)
	f(`{"imp":[{"bidfloor":1e308,"bidfloorcur":"","secure":-128}],"ext":{"k":"v"},"ext":null}`)
	f(`{"source":{"schain":{"complete":1,"nodes":[{"asi":"a","sid":"1","hp":1}],"ver":"1.0"}}}`)
	f(`{"imp":[{"id":"1"},null,{"id":"3"}]}`)
	f(`{}`)
	// Declined, each as the token path rejects it (or too deep).
	f(``)
	f(`  `)
	f(`null`)
	f(`[]`)
	f(`"x"`)
	f(`{"id":"a"} x`)
	f(`{"id":"a"}}`)
	f(`{"id":"a",}`)
	f(`{"id":"a" "imp":[]}`)
	f(`{"id" "a"}`)
	f(`{"id":1}`)
	f(`{"tmax":1.5}`)
	f(`{"tmax":1e2}`)
	f(`{"tmax":99999999999999999999}`)
	f(`{"tmax":9223372036854775808}`)
	f(`{"imp":[{"exp":2147483648}]}`)
	f(`{"imp":[1]}`)
	f(`{"imp":[{"id":"1"},]}`)
	f(`{"imp":[{"id":"1"} {"id":"2"}]}`)
	f(`{"imp":{"id":"1"}}`)
	f(`{"at":01}`)
	f(`{"at":-}`)
	f(`{"x":1e400}`)
	f(`{"x":tru}`)
	f(`{"x":nul}`)
	f(`{"x":[1,2}`)
	f(`{"x":"a` + "\x01" + `"}`)
	f(`{"x":"\q"}`)
	f(`{"x":"\u12"}`)
	f(`{"id":"a"`)
	f(`{"id":"a`)
	f(`{"id`)
	f(`{`)
	f("{\"id\":\"a\"}\f")
	f(strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001))
	deep := func(n int) string {
		return `{"ext":` + strings.Repeat(`{"a":`, n-2) + `1` + strings.Repeat(`}`, n-2) + `}`
	}
	f(deep(maxDirectDepth))
	f(deep(maxDirectDepth + 1))
	f(`{"ext":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `,"id":1}`)
}

// FuzzDecodeRequestDirect: the direct decoder and the token path agree on
// every document (checkDirect).
func FuzzDecodeRequestDirect(f *testing.F) {
	seedsFrom(f, "testdata/corpus/bid-request-*.json", "")
	seedsFrom(f, "testdata/typical-request.json", "")
	seedsFrom(f, "../gates/testdata/*/*.json", "request")
	for _, s := range trickyDocuments {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"id":"a\u00e9","imp":[{"id":"1","bidfloor":1.5,"banner":{"format":[{"w":1}]}}],"imp":[{}],"regs":{"dsa":[1]}}`))
	e := AcquireEval()
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDirect(t, e, data)
	})
}
