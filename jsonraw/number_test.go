package jsonraw

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkFloat requires Float to read v bit for bit as strconv.ParseFloat
// does, and to reject what strconv or the JSON number bytes reject.
func checkFloat(t *testing.T, v string) {
	t.Helper()
	got, ok := Float([]byte(v))
	want, err := strconv.ParseFloat(v, 64)
	if err != nil || !numberBytes([]byte(v)) {
		require.False(t, ok, "%q", v)
		return
	}
	require.True(t, ok, "%q", v)
	require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%q: %v, want %v", v, got, want)
}

func TestFloat(t *testing.T) {
	for _, v := range []string{
		"0", "-0", "0.0", "-0.0", "1", "1.25", "-1.25", "0.1", "0.3", "2.675", "1.005",
		"123456789012345", "12345678901234.5", "0.00000000000001", "9007199254740993",
		"1234567890123456", "0.123456789012345", "0.1234567890123456", "999999999999999.9",
		"1e3", "1.5E-3", "1.", ".5", "-", "", "01", "1.2.3", "1-2", "0x10", "1_0", "Inf", "NaN",
		"179769313486231570000000000000000000000", "1e309",
	} {
		checkFloat(t, v)
	}
}

// FuzzFloat: Float reads every number as strconv.ParseFloat does.
func FuzzFloat(f *testing.F) {
	for _, v := range []string{"1.25", "-0", "0.1", "123456789012345", "1e5", "0.000001"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { checkFloat(t, v) })
}
