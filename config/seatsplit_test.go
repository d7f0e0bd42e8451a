package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withoutOrigins returns c with its seats' gate entries decoded again
// where a reload left them out (WithGates) and their origins cleared: what
// a decoding by seat sets and the whole document's does not.
func withoutOrigins(t *testing.T, c *Config) *Config {
	t.Helper()
	if c == nil || c.Seats == nil {
		return c
	}
	out := *c
	out.Seats = make(SeatConfigs, len(c.Seats))
	for k, s := range c.Seats {
		full, err := s.WithGates()
		require.NoError(t, err)
		require.Nil(t, full.elided)
		require.Equal(t, s.origin, full.origin)
		full.origin = 0
		out.Seats[k] = full
	}
	return &out
}

// errText is err's message ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// requireAsWhole parses data as a reload does (the last load's entries
// kept) and as the whole document, and requires the same config and the
// same errors; it returns the reload's config.
func requireAsWhole(t *testing.T, name string, data []byte) *Config {
	t.Helper()
	got, err := Parse(name, data)
	want, wantErr := parse(name, data, false)
	require.Equal(t, errText(wantErr), errText(err), "%s", data)
	require.Equal(t, withoutOrigins(t, want), withoutOrigins(t, got), "%s", data)
	return got
}

// bySeat reports whether data is decoded by seat, from an empty memo.
func bySeat(data []byte) bool {
	entryMemo.mu.Lock()
	entryMemo.name, entryMemo.entries = "x.yaml", map[string]*seatEntry{}
	entryMemo.mu.Unlock()
	c := DefaultConfig()
	return decodeBySeat("x.yaml", data, &c)
}

// inParts makes a first load decode seats blocks of any size in parts
// parts, until the test ends.
func inParts(t *testing.T, parts int) {
	oldMin, oldCount := partMin, partCount
	partMin, partCount = 1, func() int { return parts }
	t.Cleanup(func() { partMin, partCount = oldMin, oldCount })
}

// decodesInParts reports whether a first load decodes data in parts.
func decodesInParts(data []byte) bool {
	_, _, ok := decodeInParts("x.yaml", data)
	return ok
}

// bySeatEntries returns the entries splitSeats finds in data.
func bySeatEntries(data []byte) []lineAt {
	b, _ := splitSeats(data)
	return b.entries
}

// forget empties the memo: the next load is a first load.
func forget() {
	entryMemo.mu.Lock()
	entryMemo.name, entryMemo.entries = "", nil
	entryMemo.mu.Unlock()
}

// Every document reads the same by seat as whole: the layouts the split
// knows are decoded by seat, anything else (errors included, in the whole
// document's words and positions) falls back to the whole document.
func TestDecodeBySeatAgreesWithTheWholeDocument(t *testing.T) {
	f := func(split bool, doc string) {
		t.Helper()
		data := []byte(doc)
		require.Equal(t, split, bySeat(data), "%s", doc)
		requireAsWhole(t, "x.yaml", data) // from an empty memo
		requireAsWhole(t, "x.yaml", data) // from its own entries
		forget()
		requireAsWhole(t, "x.yaml", data) // a first load: the whole document, remembered
		requireAsWhole(t, "x.yaml", data) // from what it remembered
		for parts := 2; parts <= 3; parts++ {
			inParts(t, parts)
			require.Equal(t, split && len(bySeatEntries(data)) >= parts, decodesInParts(data), "%d parts: %s", parts, doc)
			forget()
			requireAsWhole(t, "x.yaml", data) // a first load in parts, remembered
			requireAsWhole(t, "x.yaml", data) // from what it remembered
		}
	}
	// Decoded by seat.
	f(true, "seats:\n  a: {action: shadow}\n  b: {failFast: false}\n")
	f(true, "seats:\n  a: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: 5}}}}\n")
	f(true, "listen: :9000\nseats: # the seats\n\n  # a comment\n  a:\n    action: shadow\n\n    # inside a\n  b:\n    gateOptions:\n      pii:\n        mode: enforce\n        options: {phone: true}\n# top\npolicy:\n  action: shadow\n")
	f(true, "seats:\n    \"up/a\": {}\n    'b': {action: enforce}\n    c:\n    d: ~\n")
	f(true, "seats:\r\n  a: {action: shadow}\r\n  b: {}\r\n")
	f(true, "seats:\n  a:\n    addGates:\n      - gate: content\n        options:\n          extraPhrases:\n            - |\n              buy now\n\n              b: not a seat\n  b: {}\n")
	f(true, "seats:\n  a: {addGates: [{gate: bidSanity,\n      options: {maxPrice: 5}}]}\n  b: {}")
	f(true, "quarantine:\n  seats: [a]\nseats:\n  a: {}\n")
	var many strings.Builder
	many.WriteString("listen: :9000\nseats:\n")
	for i := range 40 {
		fmt.Fprintf(&many, "  # seat %d\n\n  s%d:\n    action: shadow\n    gateOptions: {rtb.bid-sanity: {options: {maxPrice: %d}}}\n\n", i, i, i+1)
	}
	many.WriteString("# the end\npolicy:\n  action: shadow\n")
	f(true, many.String())
	// Errors: the whole document reports them.
	f(false, "seats:\n  a: {action: [1]}\n  b: {}\n")
	f(false, "seats:\n  a: {actio: shadow}\n")
	f(false, "seats:\n  a: {}\n  b: {}\n  a: {action: shadow}\n")
	f(false, "seats:\n  a: {}\n  'a': {}\n")
	f(false, "seats:\n  a: {action: \"x\n  b: y\"}\n")
	f(false, "seats:\n  a: [1,\n  2]\n")
	f(false, "seats:\n  a: {}\nseats:\n  b: {}\n")
	f(true, "seats:\n  a: {}\n  b: {action: bogus}\n")
	// Layouts it does not cut, or not alone.
	f(false, "policy: &p {action: shadow}\nseats:\n  a: {action: shadow}\n  b: *p\n")
	f(false, "seats:\n  a: &s {action: shadow}\n  b: *s\n")
	f(false, "seats:\n  a: {action: shadow}\npolicy:\n  action: *x\n")
	f(false, "seats:\n  <<: {a: {}}\n  b: {}\n")
	f(false, "seats: {a: {}, b: {}}\n")
	f(false, "seats: &all\n  a: {}\n")
	f(false, "---\nseats:\n  a: {}\n")
	f(false, "seats:\n    a: {}\n  b: {}\n")
	f(false, "seats:\n\ta: {}\n")
	f(false, "seats:\n  - a\n")
	f(false, "seats:\n  # none\n")
	f(false, "seats:\n  ? a\n  : {}\n")
	f(false, "{\nseats:\n  a: {}\n}\n")
	f(false, "policy:\n  seats:\n    a: {}\n")
}

// A reload decodes again only the entries whose text or line changed:
// the others keep their origin, and every load reads as the whole
// document does. An invalid entry fails the load as the whole document
// does, and the entries of the last good load are not forgotten by a load
// that decoded by seat.
func TestReloadBySeat(t *testing.T) {
	seat := func(i, price int) string {
		return fmt.Sprintf("  seat-%d: {gateOptions: {rtb.bid-sanity: {options: {maxPrice: %d}}}}\n", i, price)
	}
	doc := func(lines ...string) []byte {
		return []byte("listen: :9000\nseats:\n" + strings.Join(lines, "") + "policy:\n  action: enforce\n")
	}
	origin := func(c *Config, key string) uint64 {
		t.Helper()
		require.Contains(t, c.Seats, key)
		require.NotZero(t, c.Seats[key].origin)
		return c.Seats[key].origin
	}
	const name = "reload.yaml"
	first := requireAsWhole(t, name, doc(seat(0, 1), seat(1, 2), seat(2, 3)))
	require.Nil(t, first.Seats["seat-0"].elided, "a seat decoded by this load holds its gate entries")
	// An edit: the other entries are kept, without their gate entries.
	edit := requireAsWhole(t, name, doc(seat(0, 1), seat(1, 20), seat(2, 3)))
	require.NotNil(t, edit.Seats["seat-0"].elided)
	require.Nil(t, edit.Seats["seat-0"].GateOptions)
	require.Nil(t, edit.Seats["seat-1"].elided)
	require.Equal(t, origin(first, "seat-0"), origin(edit, "seat-0"))
	require.NotEqual(t, origin(first, "seat-1"), origin(edit, "seat-1"))
	require.Equal(t, origin(first, "seat-2"), origin(edit, "seat-2"))
	// Back to the earlier content: decoded again (only the last load is kept).
	back := requireAsWhole(t, name, doc(seat(0, 1), seat(1, 2), seat(2, 3)))
	require.NotEqual(t, origin(edit, "seat-1"), origin(back, "seat-1"))
	require.Equal(t, origin(first, "seat-2"), origin(back, "seat-2"))
	// An addition above moves the lines below: those are decoded again, at
	// their new lines.
	added := requireAsWhole(t, name, doc(seat(0, 1), seat(9, 9), seat(1, 2), seat(2, 3)))
	require.Equal(t, origin(back, "seat-0"), origin(added, "seat-0"))
	require.NotEqual(t, origin(back, "seat-2"), origin(added, "seat-2"))
	// A deletion and a renamed key.
	renamed := requireAsWhole(t, name, doc(seat(0, 1), strings.Replace(seat(9, 9), "seat-9", "seat-8", 1), seat(2, 3)))
	require.NotContains(t, renamed.Seats, "seat-9")
	require.NotContains(t, renamed.Seats, "seat-1")
	require.Equal(t, origin(added, "seat-0"), origin(renamed, "seat-0"))
	// An invalid entry fails the load with the whole document's errors;
	// the next good load still has the last good load's entries.
	_, err := Parse(name, doc(seat(0, 1), "  seat-8: {action: [x]}\n", seat(2, 3)))
	require.Error(t, err)
	requireAsWhole(t, name, doc(seat(0, 1), "  seat-8: {action: [x]}\n", seat(2, 3)))
	again := requireAsWhole(t, name, doc(seat(0, 1), strings.Replace(seat(9, 9), "seat-9", "seat-8", 1), seat(2, 3)))
	require.Equal(t, origin(renamed, "seat-0"), origin(again, "seat-0"))
	// Validation reads what a kept seat left out as it reads a decoded one.
	invalid := doc(seat(0, 1), "  seat-7: {gates: [{gate: pii}]}\n", "  seat-6: {replaceGates: true, addGates: [{gate: pii}]}\n")
	for range 2 {
		_, err := Parse(name, invalid)
		require.ErrorContains(t, err, `seat "seat-7": gates needs replaceGates: true`)
		require.ErrorContains(t, err, `seat "seat-6": addGates and replaceGates: true cannot be combined`)
		requireAsWhole(t, name, invalid)
	}
	// Another file's load: nothing of the first file is reused for it.
	other := requireAsWhole(t, "other.yaml", doc(seat(0, 1)))
	require.NotEqual(t, origin(again, "seat-0"), origin(other, "seat-0"))
	require.Equal(t, "other.yaml", other.Seats["seat-0"].File())
}
