//go:build !race

package jsonraw

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadersAllocs: validating and reading a document allocates nothing.
func TestReadersAllocs(t *testing.T) {
	data := typical(t, "response")
	buf := make([]byte, 0, 4096)
	keys := NewKeys("id", "seatbid", "bidid", "cur")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := Validate(data); err != nil {
			t.Fatal(err)
		}
		m, _ := Object(data)
		for k, v, ok := m.Next(); ok; k, v, ok = m.Next() {
			keys.Match(k)
			if v[0] == '"' {
				buf = Unescape(buf[:0], v[1:len(v)-1])
				buf = AppendString(buf, string(v))
			}
		}
		buf = AppendValidUTF8(buf[:0], data)
		buf = AppendFloat(buf, 1.25)
	}))
}
