package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The seats mapping decodes as yaml.v3 decodes a map (SeatConfigs), values
// and errors alike, but without comparing every pair of keys.
func TestSeatsDecodeAsAMap(t *testing.T) {
	f := func(doc string) {
		t.Helper()
		var plain struct {
			X     any                   `yaml:"x"` // holds anchors
			Seats map[string]SeatConfig `yaml:"seats"`
		}
		var ours struct {
			X     any         `yaml:"x"`
			Seats SeatConfigs `yaml:"seats"`
		}
		perr := decodeStrict("x.yaml", []byte(doc), &plain)
		oerr := decodeStrict("x.yaml", []byte(doc), &ours)
		if perr != nil {
			require.EqualError(t, oerr, perr.Error(), doc)
			return
		}
		require.NoError(t, oerr, doc)
		require.Equal(t, plain.Seats, map[string]SeatConfig(ours.Seats), doc)
	}
	f("seats:\n  a: {action: shadow}\n  b: {failFast: false}\n")
	f("seats: {}\n")
	f("seats:\n")
	f("seats: ~\n")
	f("seats: [a]\n")
	f("seats: 5\n")
	f("seats:\n  a: ~\n  b: {}\n")
	f("seats:\n  a: {action: shadow}\n  b: {}\n  a: {}\n  c: {}\n  a: {}\n  b: {}\n")
	f("seats:\n  a: {bogus: 1}\n  b: {failFast: maybe}\n")
	f("seats:\n  a: {gateOptions: {x: {mode: warn, extra: 1}}}\n")
	f("seats:\n  1: {action: shadow}\n  '1': {}\n")
	f("seats:\n  [a]: {}\n")
	f("x: &b {action: shadow}\nseats:\n  a: *b\n")
	f("seats: &s\n  a: {action: shadow}\n")
	f("x: &s {a: {action: shadow}}\nseats: *s\n")
	f("x: &s {a: {action: shadow}, b: {}}\nseats:\n  <<: *s\n  b: {failFast: false}\n")
	// More seats than one chunk: values and errors in document order.
	gen := func(bad bool) string {
		var b strings.Builder
		b.WriteString("seats:\n")
		for i := range 3*seatChunk + 5 {
			switch {
			case bad && i%7 == 3:
				fmt.Fprintf(&b, "  s%d: {bogus: %d}\n", i, i)
			case bad && i%7 == 5:
				fmt.Fprintf(&b, "  s%d: {failFast: %d}\n", i, i)
			default:
				fmt.Fprintf(&b, "  s%d: {action: shadow, failFast: %v}\n", i, i%2 == 0)
			}
		}
		return b.String()
	}
	f(gen(false))
	f(gen(true))
}

// Ten thousand seats, one of them twice: the duplicate is reported as
// yaml.v3 reports it.
func TestManySeatsDuplicate(t *testing.T) {
	var b strings.Builder
	b.WriteString("seats:\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "  s%d: {}\n", i)
	}
	b.WriteString("  s17: {}\n")
	_, err := Parse("x.yaml", []byte(b.String()))
	require.EqualError(t, err, `x.yaml:10002: mapping key "s17" already defined at line 19`)
}

// A reload decodes again only the seat files whose bytes changed; what it
// reads is what it loads, an error included.
func TestSeatsDirDecodesOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "seats"), 0o755))
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "seats", name), []byte(text), 0o644))
	}
	path := filepath.Join(dir, "bidguard.yaml")
	load := func() (*Config, error) { return Parse(path, []byte("seatsDir: seats\n")) }
	write("a.yaml", "seat: a\naction: shadow\n")
	write("b.yaml", "seat: b\nfailFast: false\n")
	first, err := load()
	require.NoError(t, err)

	write("a.yaml", "seat: a\naction: enforce\n") // the same size
	second, err := load()
	require.NoError(t, err)
	require.Equal(t, "shadow", first.Seats["a"].Action, "an earlier load's seats do not change")
	require.Equal(t, "enforce", second.Seats["a"].Action)
	require.Same(t, first.Seats["b"].FailFast, second.Seats["b"].FailFast, "an unchanged file is not decoded again")
	require.Equal(t, filepath.Join(dir, "seats", "b.yaml"), second.Seats["b"].File())

	write("b.yaml", "seat: b\nfailFast: nope\n")
	_, err = load()
	require.ErrorContains(t, err, "b.yaml:2: failFast: want true or false")
	_, again := load()
	require.Equal(t, err.Error(), again.Error(), "an unchanged file with an error keeps its error")
	write("b.yaml", "seat: b\nfailFast: true\n")
	third, err := load()
	require.NoError(t, err)
	require.True(t, *third.Seats["b"].FailFast)
}

// decodesAs answers as decoding the scalar would, on the values it answers
// without decoding and on their neighbours.
func TestDecodesAsAgreesWithDecoding(t *testing.T) {
	type name string
	types := []reflect.Type{reflect.TypeOf(""), reflect.TypeOf(name("")), reflect.TypeOf(0), reflect.TypeOf(int8(0)),
		reflect.TypeOf(uint(0)), reflect.TypeOf(uint16(0)), reflect.TypeOf(true), reflect.TypeOf(1.5),
		reflect.TypeOf(time.Duration(0)), reflect.TypeOf(time.Time{}), reflect.TypeOf(net.IP{})}
	for _, v := range []string{"a", `"5"`, "5", "+5", "-5", "010", "0x10", "300", "-129", "99999999999999999999",
		"1e3", "1.5", "true", "false", "yes", "True", "~", "5s", "!!int 5", "!!str 5", "!!bool true", "''", "2001-01-01"} {
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte("x: "+v), &doc))
		n := doc.Content[0].Content[1]
		for _, typ := range types {
			want := n.Decode(reflect.New(typ).Interface()) == nil
			require.Equal(t, want, decodesAs(n, typ), "%s into %s", v, typ)
		}
	}
}

// A first read of a seatsDir spread over several goroutines loads what a
// read on one loads, its errors in the same order.
func TestSeatsDirInPartsAsOnOne(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "seats", "sub.yaml"), 0o755))
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "seats", name), []byte(text), 0o644))
	}
	for i := range 30 {
		write(fmt.Sprintf("s%02d.yaml", i), fmt.Sprintf("seat: s%02d\ngateOptions: {rtb.bid-sanity: {options: {maxPrice: %d}}}\n", i, i+1))
	}
	write("s07.yaml", "seat: s07\nbogus: 1\n")
	write("s12.yaml", "seat: s03\n")
	write("s20.yml", "action: shadow\n")
	write("notes.txt", "not a seat")
	path := filepath.Join(dir, "bidguard.yaml")
	load := func(parts int) (*Config, error) {
		forgetSeatFiles()
		oldMin, oldCount := partMin, partCount
		defer func() { partMin, partCount = oldMin, oldCount }()
		partMin, partCount = 1, func() int { return parts }
		return Parse(path, []byte("seatsDir: seats\n"))
	}
	one, oneErr := load(1)
	require.Error(t, oneErr)
	for _, m := range []string{`s07.yaml:2: unknown key "bogus"`, `s12.yaml: seat "s03" is defined twice`, "s20.yml: seat: missing"} {
		require.Contains(t, oneErr.Error(), m)
	}
	require.Len(t, one.Seats, 28)
	for _, parts := range []int{2, 3, 7} {
		got, err := load(parts)
		require.Equal(t, oneErr.Error(), err.Error(), "%d parts", parts)
		require.Equal(t, withoutOrigins(t, one), withoutOrigins(t, got), "%d parts", parts)
	}
}

// forgetSeatFiles empties the seat files' memo: the next read is a first.
func forgetSeatFiles() { seatMemo.keep("", nil) }
