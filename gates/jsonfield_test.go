package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONMember(t *testing.T) {
	f := func(obj, key, want string) {
		t.Helper()
		got := jsonMember([]byte(obj), key)
		if want == "<nil>" {
			require.Nil(t, got, obj)
			return
		}
		require.Equal(t, want, string(got), obj)
	}
	f(`{"coppa":1}`, "coppa", "1")
	f(` { "a" : {"coppa":0, "x":[1,{"y":"}"}]} , "coppa" : 1 } `, "coppa", "1") // nested members are not top-level
	f(`{"coppa":1,"coppa":0}`, "coppa", "0")                                    // the last one wins
	f(`{"coppa":0,"COPPA":1}`, "coppa", "1")                                    // keys differing only in case too
	f(`{"a\"coppa":1}`, "coppa", "<nil>")
	f(`{"s":"a,\"b\\","coppa":"1"}`, "coppa", `"1"`)
	f(`{"coppa":true}`, "coppa", "true")
	f(`{"coppa":null}`, "coppa", "null")
	f(`{"x":[[[]]],"coppa":[1]}`, "coppa", "[1]")
	f(`{}`, "coppa", "<nil>")
	f(`[{"coppa":1}]`, "coppa", "<nil>")
	f(``, "coppa", "<nil>")
	f(`null`, "coppa", "<nil>")
	f(`{"coppa"`, "coppa", "<nil>")
	f(`{"coppa":`, "coppa", "<nil>")
	f(`{"coppa":"x`, "coppa", "<nil>")
}

func TestJSONIsOne(t *testing.T) {
	for _, s := range []string{"1", "1.0", "1.000"} {
		require.True(t, jsonIsOne([]byte(s)), s)
	}
	for _, s := range []string{"", "0", "10", "1.", "1.01", "true", `"1"`, "-1", "1e0", "null"} {
		require.False(t, jsonIsOne([]byte(s)), s)
	}
}
