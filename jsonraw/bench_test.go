package jsonraw

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// typical reads a typical document; name-compact is it without
// whitespace, as exchanges and bidders send it.
func typical(tb testing.TB, name string) []byte {
	tb.Helper()
	base, compact := strings.CutSuffix(name, "-compact")
	data, err := os.ReadFile("testdata/typical-" + base + ".json")
	require.NoError(tb, err)
	if compact {
		var buf bytes.Buffer
		require.NoError(tb, json.Compact(&buf, data))
		data = buf.Bytes()
	}
	return data
}

func BenchmarkValidate(b *testing.B) {
	for _, name := range []string{"request", "response"} {
		b.Run(name, func(b *testing.B) {
			data := typical(b, name)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Validate(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	data := typical(b, "request")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Lookup(data, "tmax"); !ok {
			b.Fatal("no tmax")
		}
	}
}

func BenchmarkValidateTokens(b *testing.B) {
	for _, name := range []string{"request", "response", "request-compact", "response-compact"} {
		b.Run(name, func(b *testing.B) {
			data := typical(b, name)
			var toks []Token
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				toks = toks[:0]
				if _, err := ValidateTokens(data, &toks); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnescapeValid unescapes the typical response's strings that
// hold escapes (its creatives' markup).
func BenchmarkUnescapeValid(b *testing.B) {
	data := typical(b, "response")
	var bodies [][]byte
	var toks []Token
	_, err := ValidateTokens(data, &toks)
	require.NoError(b, err)
	n := 0
	for _, t := range toks {
		if t.Kind == TokString && t.Escaped {
			bodies = append(bodies, data[t.Off+1:t.End-1])
			n += int(t.End - t.Off - 2)
		}
	}
	buf := make([]byte, 0, n)
	b.ReportAllocs()
	b.SetBytes(int64(n))
	for b.Loop() {
		buf = buf[:0]
		for _, s := range bodies {
			buf = UnescapeValid(buf, s)
		}
	}
}
