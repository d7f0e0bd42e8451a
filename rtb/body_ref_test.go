package rtb

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// isJSONTypeRef and safeJSONTypeRef are isJSONType and safeJSONType as
// they were before the values exchanges and bidders send were taken whole,
// kept as the reference they must agree with (TestMediaTypesDifferential,
// FuzzMediaTypesDifferential).
func isJSONTypeRef(ct []byte) bool {
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), []byte("application/json"))
}

func safeJSONTypeRef(ct []byte) []byte {
	ct = bytes.TrimSpace(ct)
	typ, params, _ := bytes.Cut(ct, []byte(";"))
	if !bytes.EqualFold(bytes.TrimSpace(typ), []byte("application/json")) {
		return jsonType
	}
	params = bytes.TrimSpace(params)
	if len(params) == 0 {
		return jsonType
	}
	k, v, _ := bytes.Cut(params, []byte("="))
	if bytes.EqualFold(bytes.TrimSpace(k), []byte("charset")) {
		v = bytes.Trim(bytes.TrimSpace(v), `"`)
		if bytes.EqualFold(v, []byte("utf-8")) {
			return jsonTypeUTF8
		}
	}
	return jsonType
}

func sameMediaType(t *testing.T, ct string) {
	t.Helper()
	require.Equal(t, isJSONTypeRef([]byte(ct)), isJSONType([]byte(ct)), "%q", ct)
	require.Equal(t, string(safeJSONTypeRef([]byte(ct))), string(safeJSONType([]byte(ct))), "%q", ct)
}

var mediaTypeSeeds = []string{
	"", "application/json", "application/json; charset=utf-8", "Application/JSON", "application/json ", " application/json",
	"application/json;charset=utf-8", "application/json; charset=UTF-8", "application/json; charset=utf-8 ", "application/json; charset=\"utf-8\"",
	"application/jsonx", "application/json-seq", "application/json; charset=latin1", "text/plain", "application/\u212aon",
}

func TestMediaTypesDifferential(t *testing.T) {
	for _, ct := range mediaTypeSeeds {
		sameMediaType(t, ct)
	}
}

// FuzzMediaTypesDifferential: isJSONType and safeJSONType agree with
// their references on any value (go test -run '^$' -fuzz
// FuzzMediaTypesDifferential ./rtb/).
func FuzzMediaTypesDifferential(f *testing.F) {
	for _, ct := range mediaTypeSeeds {
		f.Add(ct)
	}
	f.Fuzz(sameMediaType)
}
