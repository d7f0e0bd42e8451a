package gojson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/jsonraw"
)

// typicalResponse is the engine's typical response (3 bids, about 2 KB).
func typicalResponse(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile("../../engine/testdata/typical-response.json")
	require.NoError(tb, err)
	return data
}

// manyBids is the typical response with its bids repeated, each with an id
// of its own, to n bids in one seatbid (n = 1,000 is limits.maxBids).
func manyBids(tb testing.TB, n int) []byte {
	tb.Helper()
	var resp map[string]any
	require.NoError(tb, json.Unmarshal(typicalResponse(tb), &resp))
	var bids []any
	for _, sb := range resp["seatbid"].([]any) {
		bids = append(bids, sb.(map[string]any)["bid"].([]any)...)
	}
	out := make([]any, n)
	for i := range out {
		b := map[string]any{}
		for k, v := range bids[i%len(bids)].(map[string]any) {
			b[k] = v
		}
		b["id"] = fmt.Sprintf("b%d", i)
		out[i] = b
	}
	resp["seatbid"] = []any{map[string]any{"seat": "512", "bid": out}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the markup as the typical response has it, not as \u003c escapes
	require.NoError(tb, enc.Encode(resp))
	return buf.Bytes()
}

// BenchmarkDecode: bidguard's decoder (validation, decoding into pooled
// storage, the raw bytes of every bid kept), go-json and encoding/json
// (decoding into a new openrtb2.BidResponse: what a replacement would
// at least do), on the typical response and on 1,000 bids.
func BenchmarkDecode(b *testing.B) {
	docs := []struct {
		name string
		data []byte
	}{{"typical", typicalResponse(b)}, {"1000bids", manyBids(b, 1000)}}
	for _, doc := range docs {
		b.Run(doc.name+"/bidguard", func(b *testing.B) {
			ev := engine.AcquireEval()
			defer engine.ReleaseEval(ev)
			require.NoError(b, ev.DecodeResponse(doc.data, 1000))
			require.NotEmpty(b, ev.In.Bids)
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				if err := ev.DecodeResponse(doc.data, 1000); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/go-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				var resp openrtb2.BidResponse
				if err := gojson.Unmarshal(doc.data, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/go-json+validate", func(b *testing.B) {
			// go-json would not replace the validating pass: the decode
			// rules (depth, numbers overflowing float64 anywhere, UTF-8
			// facts) and the token table the scanning gates read come from
			// it. This is the least a replacement would cost.
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				if _, err := jsonraw.Validate(doc.data); err != nil {
					b.Fatal(err)
				}
				var resp openrtb2.BidResponse
				if err := gojson.Unmarshal(doc.data, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/go-json-reused", func(b *testing.B) {
			// One value decoded into again and again (its slices and
			// pointers reused): the closest go-json comes to pooled
			// storage, and a lower bound only, since a new response would
			// merge into the last one's values unless they were cleared.
			var resp openrtb2.BidResponse
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				if err := gojson.UnmarshalNoEscape(doc.data, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				var resp openrtb2.BidResponse
				if err := json.Unmarshal(doc.data, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
