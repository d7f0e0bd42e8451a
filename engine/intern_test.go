package engine

import (
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// canonOpts has a field of each shape gate options take.
type canonOpts struct {
	B  bool
	I  int
	F  float64
	S  string
	P  *float64
	L  []string
	M  map[string][]string
	N  struct{ X, Y int }
	IF any
}

func canon(t *testing.T, v any) string {
	t.Helper()
	b, ok := appendCanonical(nil, reflect.ValueOf(v))
	require.True(t, ok)
	return string(b)
}

// Two options values share a canonical encoding exactly when they are equal
// as data: the intern key of a gate must never merge gates that differ.
func TestCanonicalOptions(t *testing.T) {
	one, zero, negZero := 1.0, 0.0, math.Copysign(0, -1)
	same := func(a, b *canonOpts) { t.Helper(); require.Equal(t, canon(t, a), canon(t, b)) }
	differ := func(a, b *canonOpts) { t.Helper(); require.NotEqual(t, canon(t, a), canon(t, b)) }
	same(&canonOpts{M: map[string][]string{"a": {"1"}, "b": {"2"}}}, &canonOpts{M: map[string][]string{"b": {"2"}, "a": {"1"}}})
	same(&canonOpts{P: &one}, &canonOpts{P: new(float64(1))})
	differ(&canonOpts{}, &canonOpts{P: &zero})
	differ(&canonOpts{P: &zero}, &canonOpts{P: &negZero})
	differ(&canonOpts{}, &canonOpts{L: []string{}})
	differ(&canonOpts{L: []string{"ab"}}, &canonOpts{L: []string{"a", "b"}})
	differ(&canonOpts{L: []string{"a", ""}}, &canonOpts{L: []string{"a"}})
	differ(&canonOpts{S: "\xff"}, &canonOpts{S: "\xfe"}) // JSON would write both as U+FFFD
	differ(&canonOpts{M: map[string][]string{}}, &canonOpts{})
	differ(&canonOpts{M: map[string][]string{"a": nil}}, &canonOpts{M: map[string][]string{"a": {}}})
	differ(&canonOpts{N: struct{ X, Y int }{1, 0}}, &canonOpts{N: struct{ X, Y int }{0, 1}})
	differ(&canonOpts{IF: 1}, &canonOpts{IF: "1"})
	differ(&canonOpts{IF: int64(1)}, &canonOpts{IF: 1})
	differ(&canonOpts{B: true}, &canonOpts{I: 1})
	differ(&canonOpts{F: math.NaN()}, &canonOpts{F: 0})
	_, ok := appendCanonical(nil, reflect.ValueOf(&struct{ F func() }{}))
	require.False(t, ok, "a func is not data: such a gate is not interned")
}

// A clone is equal as data and shares nothing that decoding an override
// into it could change.
func TestCloneOptions(t *testing.T) {
	one := 1.0
	v := &canonOpts{B: true, I: 2, F: 3, S: "s", P: &one, L: []string{"a"}, M: map[string][]string{"k": {"v"}}, IF: []int{1}}
	c, ok := cloneOptions(v)
	require.True(t, ok)
	require.Equal(t, v, c)
	require.Equal(t, canon(t, v), canon(t, c))
	w := c.(*canonOpts)
	*w.P = 2
	w.L[0] = "b"
	w.M["k"][0] = "w"
	w.M["x"] = nil
	w.IF.([]int)[0] = 9
	require.Equal(t, &canonOpts{B: true, I: 2, F: 3, S: "s", P: &one, L: []string{"a"}, M: map[string][]string{"k": {"v"}}, IF: []int{1}}, v)
	require.Equal(t, 1.0, one)
	c, ok = cloneOptions(&canonOpts{})
	require.True(t, ok)
	require.Equal(t, &canonOpts{}, c, "nil stays nil")
	_, ok = cloneOptions(&struct{ C chan int }{})
	require.False(t, ok)
}
