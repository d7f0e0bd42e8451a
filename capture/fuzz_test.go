package capture

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRedact: for any JSON document, the redacted one is valid JSON on one
// line; with no paths it is the document with line breaks as spaces.
func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"user":{"id":"u","ext":{"eids":[1]}},"device":{"geo":{"lat":1}}}`))
	f.Add([]byte("{\"USER\":{\"Id\":1},\n\"user\":[]}"))
	f.Add([]byte(`[{"user":{"id":1}}]`))
	red := NewRedactor(DefaultRedact)
	none := NewRedactor(nil)
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		out := red.Append(nil, doc)
		if !json.Valid(out) || bytes.ContainsAny(out, "\r\n") {
			t.Fatalf("%q -> %q", doc, out)
		}
		plain := none.Append(nil, doc)
		want := bytes.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, doc)
		if !bytes.Equal(plain, want) {
			t.Fatalf("no paths changed %q to %q", doc, plain)
		}
	})
}

// FuzzParseRecord: any line is a record or an ErrMalformed, never a panic;
// a record's documents are objects.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-28T00:00:00Z","upstream":"u","latencyMs":3,"request":{"id":"r"},"response":{},"verdict":{"action":"forward"}}`))
	f.Add([]byte(`{"request":{},"response":{}} x`))
	f.Add([]byte(`{"request":{"a":[1,2,{"b":"\u00e9"}]},"response":{"x":null},"upstream":"a\/b"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseRecord(line)
		if err != nil {
			return
		}
		if r.Request[0] != '{' || r.Response[0] != '{' {
			t.Fatalf("%q: documents %q %q", line, r.Request, r.Response)
		}
		_, _ = r.Summary()
	})
}
