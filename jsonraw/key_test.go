package jsonraw

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// foldRune is encoding/json's folding: the smallest rune of the fold orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// TestFoldsToAllRunes checks foldsTo against Unicode simple folding for every
// rune and every ASCII byte.
func TestFoldsToAllRunes(t *testing.T) {
	var ascii [128]rune
	for c := range ascii {
		ascii[c] = foldRune(rune(c))
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		fr := foldRune(r)
		for c := range ascii {
			if (fr == ascii[c]) != foldsTo(r, byte(c)) {
				t.Fatalf("foldsTo(%U, %q) = %v", r, rune(c), !(fr == ascii[c]))
			}
		}
	}
}

func TestKeyIs(t *testing.T) {
	f := func(raw, name string, want bool) {
		t.Helper()
		require.Equal(t, want, KeyIs([]byte(raw), name), "%s vs %s", raw, name)
	}
	f(`dsa`, "dsa", true)
	f(`DSA`, "dsa", true)
	f(`dſa`, "dsa", true)
	f(`\u0064sa`, "dsa", true)
	f(`\u0064\u017Fa`, "dsa", true)
	f(`ds`, "dsa", false)
	f(`dsaa`, "dsa", false)
	f(`\u212Aey`, "key", true)
	f(`d\u0000sa`, "dsa", false)
	f(`ext`, "ext", true)
	f(`e\xffxt`, "ext", false)
}

// testNames include names equal under folding, so Match must prefer the
// exact one and otherwise the first.
// Longer names (exact matches compare words of eight bytes, and the middle
// of a name over 16 bytes) include two that differ only in the middle.
var testNames = []string{"id", "ID", "sk", "dsa", "s", "k", "ext", "tmax", "a_b", "x1",
	"instl", "bidfloor", "bidfloorcur", "abcdefgh_x_ijklmnop", "abcdefgh_y_ijklmnop", "displaymanagerver"}

var testKeys = NewKeys(testNames...)

// testStruct has one int field per test name, in that order.
var testStruct = func() reflect.Type {
	var fields []reflect.StructField
	for i, n := range testNames {
		fields = append(fields, reflect.StructField{Name: "F" + strconv.Itoa(i), Type: reflect.TypeFor[int](),
			Tag: reflect.StructTag(`json:"` + n + `"`)})
	}
	return reflect.StructOf(fields)
}()

// jsonMatch returns the field encoding/json assigns the raw key to, or -1.
func jsonMatch(raw []byte) int {
	v := reflect.New(testStruct)
	doc := append(append([]byte(`{"`), raw...), `":1}`...)
	if json.Unmarshal(doc, v.Interface()) != nil {
		return -2
	}
	for i := range testNames {
		if v.Elem().Field(i).Int() == 1 {
			return i
		}
	}
	return -1
}

func TestKeysMatch(t *testing.T) {
	f := func(raw string, want int) {
		t.Helper()
		require.Equal(t, want, testKeys.Match([]byte(raw)), raw)
		require.Equal(t, want, testKeys.Match(inDocument([]byte(raw))), "%s, in a document", raw)
		require.Equal(t, want, jsonMatch([]byte(raw)), "encoding/json agrees: %s", raw)
	}
	f(`id`, 0)
	f(`ID`, 1)
	f(`Id`, 0)
	f(`iD`, 0)
	f(`\u0049D`, 1)
	f(`SK`, 2)
	f(`ſK`, 2)
	f(`ſ`, 4)
	f(`K`, 5)
	f(`\u212a`, 5)
	f(`TMAX`, 7)
	f(`nope`, -1)
	f(``, -1)
	f(`A_B`, 8)
	f(`X1`, 9)
	f(`instl`, 10)
	f(`instL`, 10)
	f(`inst`, -1)
	f(`bidfloor`, 11)
	f(`bidfloo`, -1)
	f(`bidfloorcur`, 12)
	f(`bidfloorcuR`, 12)
	f(`bidfloorcux`, -1)
	f(`abcdefgh_x_ijklmnop`, 13)
	f(`abcdefgh_y_ijklmnop`, 14)
	f(`abcdefgh_Y_ijklmnop`, 14)
	f(`abcdefgh_z_ijklmnop`, -1)
	f(`displaymanagerver`, 15)
	f(`displaymanagerve`, -1)
	f(`displaymanagerverx`, -1)
	for i, n := range testNames {
		at, exact := testKeys.MatchExact([]byte(n))
		require.Equal(t, i, at, n)
		require.True(t, exact, n)
		at, exact = testKeys.MatchExact(inDocument([]byte(n)))
		require.Equal(t, i, at, n)
		require.True(t, exact, n)
	}
	require.Panics(t, func() { NewKeys("a", "a") })
	require.Panics(t, func() { NewKeys("é") })
}

// inDocument returns raw as a key cut from a document: bytes after it,
// within its capacity, that must not count.
func inDocument(raw []byte) []byte {
	doc := append(append([]byte(`{"`), raw...), `":"id","sk":1}`...)
	return doc[2 : 2+len(raw)]
}

// FuzzKeysMatch: Keys.Match and KeyIs pick the field encoding/json picks.
func FuzzKeysMatch(f *testing.F) {
	for _, s := range []string{`abcdefgh_x_ijklmnop`, `bidfloorCur`, `id`, `ID`, `\u0069d`, `ſk`, `\u017f\u212a`, `DSA`, `tma\u0078`, "\xff", `\ud800`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := Validate(append(append([]byte(`"`), raw...), '"')); err != nil {
			return
		}
		want := jsonMatch(raw)
		require.Equal(t, want, testKeys.Match(raw), "%q", raw)
		require.Equal(t, want, testKeys.Match(inDocument(raw)), "%q, in a document", raw)
		for i, n := range testNames {
			one := NewKeys(n)
			require.Equal(t, one.Match(raw) == 0, KeyIs(raw, n), "%q vs %q", raw, n)
			if want == i {
				require.True(t, KeyIs(raw, n))
			}
		}
	})
}
