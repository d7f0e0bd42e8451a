package gojson

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

// decodeBoth decodes data into T with encoding/json and with go-json and
// says how they differ: "" when they agree (both reject, or both accept
// with equal values), else "std accepts, go-json rejects: ..." and so on.
func decodeBoth[T any](data []byte) string {
	var std, goj T
	stdErr := json.Unmarshal(data, &std)
	gojErr := gojson.Unmarshal(data, &goj)
	switch {
	case stdErr != nil && gojErr != nil:
		return ""
	case stdErr != nil:
		return "encoding/json rejects (" + stdErr.Error() + "), go-json accepts"
	case gojErr != nil:
		return "encoding/json accepts, go-json rejects (" + gojErr.Error() + ")"
	case !reflect.DeepEqual(std, goj):
		return fmt.Sprintf("values differ:\n  encoding/json %+v\n  go-json       %+v", std, goj)
	}
	return ""
}

// differences decodes data both as a response and as a request.
func differences(data []byte) string {
	if d := decodeBoth[openrtb2.BidResponse](data); d != "" {
		return "response: " + d
	}
	if d := decodeBoth[openrtb2.BidRequest](data); d != "" {
		return "request: " + d
	}
	return ""
}

// corpus is bidguard's decode corpus: the public OpenRTB samples, the
// golden pairs of every gate, the engine's committed fuzz finds, and the
// engine's tricky documents (below).
func corpus(tb testing.TB) map[string][]byte {
	tb.Helper()
	docs := map[string][]byte{}
	add := func(glob string) {
		paths, err := filepath.Glob(glob)
		require.NoError(tb, err)
		require.NotEmpty(tb, paths, glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			require.NoError(tb, err)
			if strings.Contains(p, "/fuzz/") {
				data = fuzzValue(tb, p, data)
			}
			var pair map[string]json.RawMessage
			if strings.Contains(p, "gates/testdata") && json.Unmarshal(data, &pair) == nil {
				for _, key := range []string{"request", "response"} {
					if pair[key] != nil {
						docs[p+"#"+key] = pair[key]
					}
				}
				continue
			}
			docs[p] = data
		}
	}
	add("../../engine/testdata/corpus/*.json")
	add("../../engine/testdata/typical-*.json")
	add("../../gates/testdata/*/*.json")
	add("../../engine/testdata/fuzz/*/*")
	for i, s := range trickyDocuments {
		docs[fmt.Sprintf("tricky#%d", i)] = []byte(s)
	}
	return docs
}

// fuzzValue reads the one []byte value of a `go test fuzz v1` file.
func fuzzValue(tb testing.TB, path string, data []byte) []byte {
	text := strings.TrimSpace(strings.TrimPrefix(string(data), "go test fuzz v1\n"))
	text = strings.TrimSuffix(strings.TrimPrefix(text, "[]byte("), ")")
	s, err := strconv.Unquote(text)
	require.NoError(tb, err, path)
	return []byte(s)
}

// trickyDocuments: the engine's differential seeds (engine/differential_test.go,
// copied: test files are not importable), and more of the kinds where
// decoders part ways: Unicode case folding of keys (K is the Kelvin sign,
// ſ the long s), escaped keys, integers out of range, overflowing and
// underflowing floats, invalid UTF-8 and lone surrogates.
var trickyDocuments = append([]string{
	`{"id":"1","seatbid":[{"bid":[{"id":"x","impid":"1","price":1,"PRICE":-1,"price":2}]}]}`,
	`{"id":"1","seatbid":[{"seat":"a","bid":[{"id":"x"}]}],"SeatBid":[{"bid":[{"id":"y","price":null}]}]}`,
	`{"id":"1","seatbid":[{"seat":"a","bid":[{"id":"1"},{"id":"2"}]},{"seat":"b","group":1,"bid":[]}],"seatbid":[{"bid":[{"id":"3"}]}],"seatbid":[{},{"ext":null}]}`,
	`{"id":"1","imp":[{"id":"1","tagid":"t","banner":{"w":1,"format":[{"w":1},{"w":2}]}},{"id":"2"}],"imp":[{"id":"3","banner":{"format":[{"h":5}]}}],"imp":[{},{"secure":1}]}`,
	`{"id":"1","bcat":["a","b","c"],"bcat":["d"],"bcat":["e",null,null],"badv":[],"bapp":null,"cur":["USD"],"cur":[]}`,
	`{"\u0069d":"1","ſeatbid":[{"bid":[{"\u0069d":"x","ımpid":"1","impıd":"2","pri\u0063e":3}]}],"cu\u0072":"EUR"}`,
	`{"id":"1","regs":{"coppa":1,"dsa":{"dsarequired":3}},"REGS":{"gdpr":1,"DSA":null},"regs":null,"regs":{"ext":{"x":1}}}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","ext":null,"adm":"` + "\xff\xed\xa0\x80" + `","ext":{"a":"` + "\xc3" + `"}}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","adm":"\ud800\udc00\ud800x\\\"\u2028"}]}],"nbr":1,"nbr":null}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","w":1,"w":null,"attr":[1,2],"attr":[3]}]}],"imp":[]}`,
	`{"id":"1","seatbid":null,"imp":{}}`,
	`{"id":"1","seatbid":[{"bid":null}],"ext":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}`,
	`{"id":"1","ext":{"x":1e308,"y":-1e-400,"z":12345678901234567890}}`,
	`{"id":"1","tmax":9223372036854775807,"at":-2147483648,"imp":[{"id":"1","rwdd":127,"instl":-128}]}`,
	`{"id":"1","imp":[{"id":"1","rwdd":128}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"}]},{"bid":[{"id":"b"},{"id":"c"}]}],"seatbid":[{"bid":[{"id":"d"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a","cat":["x"],"cat":"y"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a","ext":{"dsa":1,"dsa":{"behalf":"b"}}}]}],"ext":{"seatnonbid":1}}`,
	// Bids a later key replaces are decoded by encoding/json all the same:
	// a type error in one rejects the document (a repeated "bid", a case
	// variant, a shadowed array, a repeated "seatbid" that is shorter or
	// null, at every level); a null there is no error.
	`{"id":"1","seatbid":[{"bid":["x"],"bid":[{"id":"b","impid":"1","price":1}]}]}`,
	`{"id":"1","seatbid":[{"BID":["IAB9-9"],"bid":[{"id":"b","impid":"1","price":1}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"impid":1}],"bid":[{"id":"b","impid":"1","price":1}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"},{"id":"b","ext":{},"w":1.5}],"bid":null}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"}]},{"bid":[{"cat":"IAB1"}]}],"seatbid":[{"bid":[{"id":"c"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"price":"1"}]}],"seatbid":null}`,
	`{"id":"1","seatbid":[{"bid":[{"price":"1"}]}],"SEATBID":null,"imp":[]}`,
	`{"id":"1","seatbid":[{"bid":[null,{"id":"a"}],"bid":[{"id":"b"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"a"}],"Bid":[{"id":"b"}],"bId":[{"id":"c","impid":2}]},{"bid":[]}]}`,
	` {} `, `null`, ``, "\t", `[]`, `"x"`, `1`, `true`, `{"id":1}`, `{"id":"1"} x`,
}, moreTricky...)

var moreTricky = []string{
	`{"id":"1","seatbid":[{"seat":"a","bid":[{"id":"x","impid":"1","price":1}]}],"seatbid":[{"Seat":"b"}]}`,
	`{"id":"1","seatbid":[{"Key":1,"bid":[{"id":"x","impid":"1","price":1}]}],"bidid":"a","BIDID":"b","bidıd":"c"}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","impid":"1","price":1,"price":2,"prİce":3}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","impid":"1","ext":{"a":1},"EXT":{"b":2}}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","adm":"` + "\xff\xfe\xc0\xaf\xe0\x80\xaf" + `"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","adm":"\ud800","nurl":"\udc00\ud800","burl":"\ud83d\ude00"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","price":1.7976931348623157e308,"w":-9223372036854775808}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","price":1.7976931348623159e308}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","price":4.9e-325,"h":-0}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","price":123456789012345678901234567890}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","w":18446744073709551616}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","attr":[1,2,3],"attr":[4]}]}],"cur":"USD","cur":1}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","qagmediarating":"1"}]}]}`,
	`{"id":"1","seatbid":[{"bid":[{"id":"x","ext":{"k":"v"` + "\x00" + `}}]}]}`,
	`{"id":"1","seatbid":[{"group":1,"group":1.5}]}`,
	`{"id":"1","seatbid":[{"bid":[]}],"seatbid":[]}`,
}

// TestCorpusAgreement decodes the corpus with both and lists where go-json
// parts from encoding/json (the reference of bidguard's decode rules). At
// v0.12.0 it parts nowhere (the README's dependency notes say so): the test
// fails when that stops being true.
func TestCorpusAgreement(t *testing.T) {
	docs := corpus(t)
	var differ []string
	for name, data := range docs {
		if d := differences(data); d != "" {
			differ = append(differ, name)
			t.Logf("%s %q\n%s", name, clip(data), d)
		}
	}
	t.Logf("%d documents, %d decoded otherwise by go-json", len(docs), len(differ))
	require.Empty(t, differ)
}

func clip(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// FuzzAgainstEncodingJSON: go-json decodes every document as encoding/json
// does (same accept/reject, same values), as a response and as a request.
func FuzzAgainstEncodingJSON(f *testing.F) {
	for _, data := range corpus(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if d := differences(data); d != "" {
			t.Fatalf("%q\n%s", data, d)
		}
	})
}
