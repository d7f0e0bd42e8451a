package rtb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/require"
)

func TestAppendTmax(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		got, ok := appendTmax([]byte("prefix"), []byte(in), 42, nil)
		require.True(t, ok, in)
		require.Equal(t, "prefix"+want, string(got))
		var rec members
		if _, plain := peekTmax([]byte(in), &rec); plain { // a tmax that is no integer: not recorded
			require.True(t, rec.ok, in)
			got, ok = appendTmax([]byte("prefix"), []byte(in), 42, &rec)
			require.True(t, ok, in)
			require.Equal(t, "prefix"+want, string(got), "from the recorded members")
		}
	}
	f(`{}`, `{"tmax":42}`)
	f(` { } `, `{"tmax":42}`)
	f(`{"id":"1"}`, `{"tmax":42,"id":"1"}`)
	f(`{"tmax":100,"id":"1"}`, `{"tmax":42,"id":"1"}`)
	f(`{"id":"1","tmax":100}`, `{"tmax":42,"id":"1"}`)
	f(`{"TMAX":1,"id":"1","Tmax":2,"tmax":3}`, `{"tmax":42,"id":"1"}`)
	f(`{"t\u006dax":1,"id":"1"}`, `{"tmax":42,"id":"1"}`)
	f(`{"tmaxx":1,"xtmax":2}`, `{"tmax":42,"tmaxx":1,"xtmax":2}`)
	f("{\n \"a\" : [1, {\"tmax\": 9}, \"}\"] ,\n \"tmax\" : null }", `{"tmax":42,"a" : [1, {"tmax": 9}, "}"]}`)
	f(`{"s":"a\"tmax\":1","n":-1.5e3,"b":true,"z":null}`, `{"tmax":42,"s":"a\"tmax\":1","n":-1.5e3,"b":true,"z":null}`)

	// Over maxMembers members: not recorded, read again.
	var many strings.Builder
	many.WriteString(`{"tmax":1`)
	for i := range maxMembers + 1 {
		fmt.Fprintf(&many, `,"k%d":%d`, i, i)
	}
	many.WriteString(`}`)
	var rec members
	_, ok := peekTmax([]byte(many.String()), &rec)
	require.True(t, ok)
	require.False(t, rec.ok)
	got, ok := appendTmax(nil, []byte(many.String()), 5, &rec)
	require.True(t, ok)
	require.Equal(t, `{"tmax":5`+many.String()[len(`{"tmax":1`):], string(got))

	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{"a":1`, `{"a"`, `{"a":"x`} {
		out, ok := appendTmax([]byte("p"), []byte(bad), 1, nil)
		require.False(t, ok, bad)
		require.Equal(t, "p", string(out), "dst unchanged on failure")
	}
}

// appendTmaxRef is appendTmax from recorded members as it was before it
// copied runs of members at once: one member at a time, each after a comma.
func appendTmaxRef(dst, body []byte, ms int64, rec *members) []byte {
	dst = append(dst, `{"tmax":`...)
	dst = strconv.AppendInt(dst, ms, 10)
	for _, m := range rec.spans[:rec.n] {
		if !m.tmax {
			dst = append(dst, ',')
			dst = append(dst, body[m.s:m.e]...)
		}
	}
	return append(dst, '}')
}

// TestAppendTmaxRuns: copying the recorded members a run at a time writes
// what copying them one by one wrote, whatever separates them.
func TestAppendTmaxRuns(t *testing.T) {
	typical := readFile(t, "typical-request.json")
	for _, in := range []string{
		string(typical), string(withTmax(t, 100)),
		`{"a":1,"b":2,"c":3}`, `{"a":1, "b":2,"c":3}`, `{"a":1,"tmax":5,"b":2,"c":3}`, `{"tmax":5,"a":1,"b":2,"tmax":6}`,
		`{"a":1 ,"b":2,` + "\n" + `"c":3,"d":4}`, `{"a":"x,y","b":[1,2],"c":{"d":1,"e":2}}`, `{"a":1}`, `{}`,
	} {
		var rec members
		_, _ = peekTmax([]byte(in), &rec)
		require.True(t, rec.ok, in)
		got, ok := appendTmax([]byte("p"), []byte(in), 7, &rec)
		require.True(t, ok, in)
		require.Equal(t, string(appendTmaxRef([]byte("p"), []byte(in), 7, &rec)), string(got), in)
	}
}

// FuzzAppendTmax: for any object encoding/json accepts, the rewritten body
// decodes to the same members (last key wins, as encoding/json does) with
// exactly one tmax, whatever case variants or duplicates the input held.
func FuzzAppendTmax(f *testing.F) {
	for _, s := range []string{`{"id":"1","tmax":100}`, `{"TMAX":1,"a":{"tmax":2},"Tmax":3}`, `{"t\u006dax":1}`,
		`{"a":[1,"]",{"b":"}"}],"tmax":null}`, `{}`, `{"\u0074max":5,"tmaX":6,"x":"\\"}`} {
		f.Add([]byte(s), int64(77))
	}
	f.Fuzz(func(t *testing.T, body []byte, ms int64) {
		var orig map[string]json.RawMessage
		if json.Unmarshal(body, &orig) != nil || orig == nil {
			return
		}
		out, ok := appendTmax(nil, body, ms, nil)
		require.True(t, ok, "%q", body)
		// From the members peekTmax recorded, the same bytes.
		var rec members
		if _, _ = peekTmax(body, &rec); rec.ok {
			again, ok := appendTmax(nil, body, ms, &rec)
			require.True(t, ok)
			require.Equal(t, string(out), string(again), "%q", body)
			require.Equal(t, string(appendTmaxRef(nil, body, ms, &rec)), string(again), "%q", body)
		}
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(out, &got), "%q -> %q", body, out)
		// Unique top-level tmax, case-insensitively.
		n := 0
		dec := json.NewDecoder(bytes.NewReader(out))
		_, _ = dec.Token()
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err)
			if strings.EqualFold(k.(string), "tmax") {
				n++
			}
			var skip json.RawMessage
			require.NoError(t, dec.Decode(&skip))
		}
		require.Equal(t, 1, n, "%q", out)
		var req openrtb2.BidRequest
		if json.Unmarshal(body, &req) == nil {
			require.NoError(t, json.Unmarshal(out, &req))
			require.Equal(t, ms, req.TMax)
		}
		// Every other member is kept with its value.
		for k, v := range orig {
			if strings.EqualFold(k, "tmax") {
				continue
			}
			require.JSONEq(t, string(v), string(got[k]), "member %q", k)
		}
		for k := range got {
			if !strings.EqualFold(k, "tmax") {
				_, ok := orig[k]
				require.True(t, ok, "member %q appeared", k)
			}
		}
	})
}

func TestGunzip(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	z := gzipped(t, data)
	out, err := gunzip([]byte("x"), z, len(data))
	require.NoError(t, err)
	require.Equal(t, "x", string(out[:1]))
	require.Equal(t, data, out[1:])

	_, err = gunzip(nil, z, len(data)-1)
	require.ErrorIs(t, err, errTooLarge)
	// Two members, the second empty: the first fills the buffer to exactly
	// the limit before the end of the stream is seen.
	two := append(append([]byte{}, z...), gzipped(t, nil)...)
	out, err = gunzip(make([]byte, 0, len(data)), two, len(data))
	require.NoError(t, err, "exactly the limit, into a buffer filled to its capacity")
	require.Equal(t, data, out)
	_, err = gunzip(nil, []byte("not gzip"), 100)
	require.ErrorIs(t, err, errDecompress)
	_, err = gunzip(nil, z[:len(z)/2], len(data))
	require.ErrorIs(t, err, errDecompress)
	_, err = gunzip(nil, append(append([]byte{}, z...), "junk"...), len(data))
	require.ErrorIs(t, err, errDecompress, "trailing garbage")

	bomb := gzipped(t, make([]byte, 2<<20))
	out, err = gunzip(nil, bomb, 1<<16)
	require.ErrorIs(t, err, errTooLarge)
	require.LessOrEqual(t, cap(out), 1<<18, "decompression stops near the cap")
}

func TestMediaTypes(t *testing.T) {
	for ct, ok := range map[string]bool{"application/json": true, "Application/JSON ; charset=utf-8": true, " application/json": true,
		"text/json": false, "application/json-seq": false, "application/jsonx": false, "": false} {
		require.Equal(t, ok, isJSONType([]byte(ct)), ct)
	}
	for ce, want := range map[string][2]bool{"": {true, false}, "identity": {true, false}, "gzip": {false, true}, "GZIP": {false, true},
		"x-gzip": {false, true}, "br": {false, false}, "gzip, br": {false, false}} {
		require.Equal(t, want[0], isIdentity([]byte(ce)), ce)
		require.Equal(t, want[1], isGzip([]byte(ce)), ce)
	}
	for in, want := range map[string]string{"application/json": "application/json", "application/json;charset=UTF-8": "application/json; charset=utf-8",
		`application/json; charset="utf-8"`: "application/json; charset=utf-8", "text/plain": "application/json",
		"application/json; charset=latin1": "application/json", "": "application/json"} {
		require.Equal(t, want, string(safeJSONType([]byte(in))), in)
	}
}
