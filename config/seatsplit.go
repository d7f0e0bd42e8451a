package config

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
)

// A reload of a config file of many seats decodes again only the seat
// entries whose text changed. The `seats:` block of the file is cut into
// its entries by their lines (splitSeats); the rest of the document, the
// entries' lines left blank, is decoded as a document, and each entry
// alone, the lines of its nodes moved to where the entry lies in the file:
// an entry whose text and first line are those of an entry of the last load
// of the file is that load's seat. Whatever this cannot read exactly as
// the whole document reads (a layout it does not know, an anchor or alias,
// a duplicate seat, any error) makes Parse decode the whole document
// instead, so a config means, and its errors read, the same either way.

// origins numbers the decodings of seats (SeatConfig.Origin).
var origins atomic.Uint64

// yieldEvery is how many seat entries or files a load reads between two
// yields of its goroutine.
const yieldEvery = 32

// Origin identifies the decoding the seat came from: two seats with the
// same Origin were decoded from the same text at the same lines of the same
// file, and are equal. 0 (a seat not decoded by a load, or decoded with the
// whole document) is equal to nothing.
func (s SeatConfig) Origin() uint64 { return s.origin }

// seatSource is the text a seat was decoded from, kept with a seat whose
// gate entries a load's memo left out: they are most of what a decoded
// seat holds (parsed YAML, about 1 KB for one overridden option), and the
// engine needs them only to compile the seat again, which a reload of an
// unchanged seat does not.
type seatSource struct {
	name string // the file, for positions
	text string // an entry of the seats block, or a whole seat file (line < 0)
	line int    // the entry's first line (0-based)
	// The lengths of the lists left out, which validation reads.
	gates, addGates int
}

// elide returns s without its gate entries, decoded again from src by
// WithGates.
func (s SeatConfig) elide(src *seatSource) SeatConfig {
	src.gates, src.addGates = len(s.Gates), len(s.AddGates)
	s.AddGates, s.GateOptions, s.Gates = nil, nil, nil
	s.elided = src
	return s
}

// WithGates returns the seat with its gate entries (addGates, gateOptions,
// gates). A seat a reload found unchanged since the load before is given
// without them, which are decoded again from its text here: the engine
// needs them only when it compiles the seat again.
func (s SeatConfig) WithGates() (SeatConfig, error) {
	src := s.elided
	if src == nil {
		return s, nil
	}
	var full SeatConfig
	if src.line < 0 {
		if err := decodeStrict(src.name, []byte(src.text), &full); err != nil {
			return s, err
		}
	} else {
		e, ok := decodeEntry(src.name, []byte(src.text), src.line)
		if !ok {
			return s, fmt.Errorf("%s:%d: seat %q: its entry no longer decodes", src.name, src.line+1, s.Seat)
		}
		full = e.seat
	}
	full.file, full.origin = s.file, s.origin
	return full, nil
}

// listLens returns the lengths of the seat's gates and addGates, left out
// or not.
func (s SeatConfig) listLens() (gates, addGates int) {
	if s.elided != nil {
		return s.elided.gates, s.elided.addGates
	}
	return len(s.Gates), len(s.AddGates)
}

// seatBlock is the `seats:` block of a config document as splitSeats found
// it: the offset just after the key's line, the offset of the first line
// after the block, the lines between, and where the entries start.
type seatBlock struct {
	data       []byte
	key, end   int // byte offsets
	keyLine    int // the line of `seats:` (0-based)
	blankLines int // the lines of the block
	entries    []lineAt
}

// lineAt is a line's byte offset and number (0-based) in the document.
type lineAt struct{ off, line int }

// splitSeats finds the block of the top-level key `seats:` (written alone
// on its line at column 0, the block below it) and its entries: the lines
// of the block at its least indentation start one, deeper lines, blank
// lines and comments belong to the entry above. ok is false when the
// document has no such block or one this cannot cut safely (a tab in an
// indentation, a line less indented than the entries, a directive or
// document marker, `seats:` twice).
func splitSeats(data []byte) (b seatBlock, ok bool) {
	b.data, b.key, b.end = data, -1, -1
	indent, n := 0, 0
	for off := 0; off < len(data); n++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		line := data[off:next]
		at := lineAt{off, n}
		off = next
		d, blank := lineIndent(line)
		if d < 0 {
			return b, false
		}
		if blank {
			continue
		}
		if d == 0 {
			if b.key >= 0 && b.end < 0 {
				b.end, b.blankLines = at.off, at.line-b.keyLine-1
			}
			switch {
			case bytes.HasPrefix(line, []byte("---")), bytes.HasPrefix(line, []byte("...")), line[0] == '%':
				return b, false
			case isSeatsKey(line):
				if b.key >= 0 {
					return b, false
				}
				b.key, b.keyLine = off, at.line
			}
			continue
		}
		if b.key < 0 || b.end >= 0 {
			continue
		}
		if indent == 0 {
			indent = d
		}
		switch {
		case d == indent:
			b.entries = append(b.entries, at)
		case d < indent:
			return b, false
		}
	}
	if b.key >= 0 && b.end < 0 {
		b.end, b.blankLines = len(data), n-b.keyLine-1
	}
	return b, b.key >= 0 && len(b.entries) > 0
}

// lineIndent returns a line's indentation in spaces and whether it is blank
// or a comment; -1 when a tab comes before its first other character.
func lineIndent(line []byte) (int, bool) {
	for i, c := range line {
		switch c {
		case ' ':
			continue
		case '\t':
			return -1, false
		case '\n', '\r', '#':
			return i, true
		}
		return i, false
	}
	return len(line), true
}

// isSeatsKey reports whether line is `seats:` alone: trailing spaces and a
// comment allowed.
func isSeatsKey(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("seats:"))
	if !ok {
		return false
	}
	d, blank := lineIndent(rest)
	return blank && (d > 0 || len(rest) == 0 || rest[0] != '#')
}

// entry returns the text of entry i, a slice of the document, and its
// first line.
func (b seatBlock) entry(i int) ([]byte, int) {
	end := b.end
	if i+1 < len(b.entries) {
		end = b.entries[i+1].off
	}
	return b.data[b.entries[i].off:end], b.entries[i].line
}

// rest returns the document with the lines of the block below `seats:`
// left blank, so that the rest of it decodes at its own lines.
func (b seatBlock) rest() []byte {
	out := make([]byte, 0, b.key+b.blankLines+len(b.data)-b.end)
	out = append(out, b.data[:b.key]...)
	for range b.blankLines {
		out = append(out, '\n')
	}
	return append(out, b.data[b.end:]...)
}

// seatEntry is an entry of the seats block as a load decoded it (its
// seat's gate entries left out when kept in entryMemo).
type seatEntry struct {
	text string // the entry's lines
	line int    // its first line (0-based)
	key  string
	seat SeatConfig
}

// entryMemo holds the seat entries of the last load of a config file, by
// their text: a reload decodes only the entries that are not there. Only
// one file is kept: a process loads one config.
var entryMemo struct {
	mu      sync.Mutex
	name    string
	entries map[string]*seatEntry
}

// decodeBySeat decodes data into c as decodeAll would, one seat entry at a
// time, reusing the entries of the last load of name whose text and line
// are unchanged. It reports false (c then undefined) when it cannot: no
// seats block it can cut, or anything that is not a clean decode, which the
// whole document's decoding reports in its own words.
func decodeBySeat(name string, data []byte, c *Config) bool {
	entryMemo.mu.Lock()
	last := entryMemo.entries
	if entryMemo.name != name {
		last = nil
	}
	entryMemo.mu.Unlock()
	if last == nil {
		return false // a first load: the whole document decodes faster, and rememberSeats keeps its seats
	}
	b, ok := splitSeats(data)
	if !ok {
		return false
	}
	root, ok, err := decodeRoot(name, b.rest(), c)
	if !ok || err != nil || !seatsKeyAt(root, b.keyLine) || c.Seats != nil {
		return false
	}
	read := make(map[string]*seatEntry, len(b.entries))
	c.Seats = make(SeatConfigs, len(b.entries))
	for i := range b.entries {
		if i%yieldEvery == yieldEvery-1 {
			runtime.Gosched() // a reload runs beside the bid path, on few cores
		}
		text, line := b.entry(i)
		e, ok := last[string(text)]
		var seat SeatConfig
		if ok && e.line == line {
			seat = e.seat
		} else {
			if e, ok = decodeEntry(name, text, line); !ok {
				return false
			}
			seat = e.seat
			e.seat = e.seat.elide(&seatSource{name: name, text: e.text, line: line})
		}
		if _, dup := c.Seats[e.key]; dup {
			return false
		}
		c.Seats[e.key] = seat
		read[e.text] = e
	}
	entryMemo.mu.Lock()
	entryMemo.name, entryMemo.entries = name, read
	entryMemo.mu.Unlock()
	return true
}

// rememberSeats keeps in entryMemo the seats of c, decoded from the whole
// document data (root its root node) without an error, by the text of
// their entries, when the seats block is one splitSeats cuts and its keys
// are plain strings at the entries' first lines: the next load of name
// decodes by seat. The seats kept are given an origin.
func rememberSeats(name string, data []byte, root *yaml.Node, c *Config) {
	b, ok := splitSeats(data)
	if !ok || !seatsKeyAt(root, -1) || len(c.Seats) != len(b.entries) {
		return
	}
	var seats *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "seats" {
			seats = root.Content[i+1]
		}
	}
	if seats == nil || seats.Kind != yaml.MappingNode || seats.Style&yaml.FlowStyle != 0 ||
		len(seats.Content) != 2*len(b.entries) || !plainTree(seats) {
		return
	}
	for i := range b.entries {
		k := seats.Content[2*i]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || k.Value == "<<" || k.Line != b.entries[i].line+1 {
			return
		}
		if _, ok := c.Seats[k.Value]; !ok {
			return
		}
	}
	read := make(map[string]*seatEntry, len(b.entries))
	for i := range b.entries {
		key := seats.Content[2*i].Value
		text, line := b.entry(i)
		seat := c.Seats[key]
		seat.origin = origins.Add(1)
		c.Seats[key] = seat
		e := &seatEntry{text: string(text), line: line, key: key}
		e.seat = seat.elide(&seatSource{name: name, text: e.text, line: line})
		read[e.text] = e
	}
	entryMemo.mu.Lock()
	entryMemo.name, entryMemo.entries = name, read
	entryMemo.mu.Unlock()
}

// seatsKeyAt reports whether root is a block mapping at column 1 whose key
// `seats`, plain, is on line (0-based) with an empty value: the block below
// it is that key's value. line -1 asks only for the plain key at column 1
// of a block mapping at column 1 (the whole document).
func seatsKeyAt(root *yaml.Node, line int) bool {
	if root == nil || root.Kind != yaml.MappingNode || root.Style&yaml.FlowStyle != 0 || root.Column != 1 {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value == "seats" {
			if line < 0 { // the whole document: the block is its value
				return k.Kind == yaml.ScalarNode && k.Style == 0 && k.Column == 1 && v.Anchor == ""
			}
			return k.Kind == yaml.ScalarNode && k.Style == 0 && k.Line == line+1 && k.Column == 1 &&
				isNull(v) && v.Value == "" && v.Anchor == ""
		}
	}
	return false
}

// decodeEntry decodes one entry of the seats block, text, whose first line
// in the file is line, strictly: a mapping of one plain key, without
// anchors, aliases or a merge key, each node at its line in the file.
func decodeEntry(name string, text []byte, line int) (*seatEntry, bool) {
	if useFast {
		if doc, ok := readFast(text); ok {
			d := entryDecoder{name: name, line: line, fast: doc.Content[0]}
			if err := adoptTree(&d); err == nil {
				if e, ok := d.entry(text); ok {
					return e, true
				}
			}
		}
	}
	d := entryDecoder{name: name, line: line}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, false
	}
	return d.entry(text)
}

// entry returns the seat entry d decoded from text.
func (d *entryDecoder) entry(text []byte) (*seatEntry, bool) {
	if !d.ok || len(d.seats) != 1 {
		return nil, false
	}
	for k, s := range d.seats {
		s.origin = origins.Add(1)
		return &seatEntry{text: string(text), line: d.line, key: k, seat: s}, true
	}
	return nil, false
}

// entryDecoder takes an entry's root node from the strict decoder (with
// fast, given fast's value first: adoptTree), checks its shape and moves
// its lines, then decodes it.
type entryDecoder struct {
	name  string
	line  int
	ok    bool
	seats map[string]SeatConfig
	fast  *yaml.Node
}

func (d *entryDecoder) UnmarshalYAML(unmarshal func(any) error) error {
	var n nodeOf
	if err := unmarshal(&n); err != nil {
		return err
	}
	if d.fast != nil {
		*n.Node = *d.fast
	}
	m := n.Node
	if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) != 2 ||
		m.Content[0].Kind != yaml.ScalarNode || m.Content[0].Line != 1 ||
		m.Content[0].Value == "<<" || !plainTree(m) {
		return nil
	}
	shiftLines(m, d.line)
	// The whole document's type check walks seats as a map of seats.
	var errs []error
	if checkTypes(d.name, "seats", m, seatsType, &errs, map[int]bool{}); len(errs) > 0 {
		return nil
	}
	d.ok = true
	return unmarshal(&d.seats)
}

// plainTree reports whether n and the nodes below it have no anchor and
// no alias.
var seatsType = reflect.TypeOf(SeatConfigs(nil))

func plainTree(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return false
	}
	for _, c := range n.Content {
		if !plainTree(c) {
			return false
		}
	}
	return true
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}
