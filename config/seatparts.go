package config

import (
	"runtime"
	"sync"

	"go.yaml.in/yaml/v3"
)

// A first load of a config file of many seats decodes its `seats:` block in
// parts, one per core, in parallel: the rest of the document is decoded as
// decodeBySeat decodes it (the block's lines left blank), and each part, a
// run of whole entries, as a document of its own whose `seats:` key and
// entries stand at their lines in the file. The parts are taken only when
// each reads as its share of the block's mapping would: a block mapping at
// the entries' column with one key at the first line of each entry (not a merge key), no
// anchor or alias anywhere in it (the parts cannot see each other's) and no
// seat twice across parts. Anything else, errors included, is decoded as
// the whole document, which reports it in its own words.

// partMin is the least number of seat entries decoded in parts: below it
// the whole document decodes in about the time one part takes to start.
var partMin = 2048

// partCount is how many parts a block is decoded in: one per core, at
// most 8.
var partCount = func() int { return min(runtime.GOMAXPROCS(0), 8) }

// decodeInParts decodes data into c as decodeRoot would and returns a
// root node for rememberSeats: the rest of the document's, its seats key
// given the parts' entries as its value. ok is false (c then undefined)
// when the document is not one it decodes in parts, or not without an
// error.
func decodeInParts(name string, data []byte) (c Config, root *yaml.Node, ok bool) {
	parts := partCount()
	b, ok := splitSeats(data)
	if parts < 2 || !ok || len(b.entries) < max(partMin, parts) {
		return c, nil, false
	}
	type part struct {
		cfg   Config
		seats *yaml.Node
		ok    bool
	}
	got := make([]part, parts)
	var wg sync.WaitGroup
	for p := range got {
		first, end := p*len(b.entries)/parts, (p+1)*len(b.entries)/parts
		wg.Go(func() {
			doc := b.part(first, end)
			r, ok, err := decodeRoot(name, doc, &got[p].cfg)
			if !ok || err != nil || !seatsKeyAt(r, -1) || len(r.Content) != 2 || r.Content[0].Line != b.keyLineOf(first)+1 {
				return
			}
			seats := r.Content[1]
			if seats.Kind != yaml.MappingNode || seats.Style&yaml.FlowStyle != 0 ||
				len(seats.Content) != 2*(end-first) || !plainTree(seats) {
				return
			}
			for i := first; i < end; i++ {
				k := seats.Content[2*(i-first)]
				if k.Kind != yaml.ScalarNode || k.Value == "<<" || k.Line != b.entries[i].line+1 {
					return
				}
			}
			got[p].seats, got[p].ok = seats, true
		})
	}
	c = DefaultConfig()
	root, ok, err := decodeRoot(name, b.rest(), &c)
	wg.Wait()
	if !ok || err != nil || !seatsKeyAt(root, b.keyLine) || c.Seats != nil {
		return c, nil, false
	}
	c.Seats = make(SeatConfigs, len(b.entries))
	all := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: make([]*yaml.Node, 0, 2*len(b.entries))}
	for _, p := range got {
		if !p.ok {
			return c, nil, false
		}
		all.Content = append(all.Content, p.seats.Content...)
		for k, s := range p.cfg.Seats {
			if _, dup := c.Seats[k]; dup {
				return c, nil, false
			}
			c.Seats[k] = s
		}
	}
	withSeats := *root
	withSeats.Content = append([]*yaml.Node(nil), root.Content...)
	for i := 0; i+1 < len(withSeats.Content); i += 2 {
		if withSeats.Content[i].Value == "seats" {
			withSeats.Content[i+1] = all
		}
	}
	return c, &withSeats, true
}

// part returns entries [first, end) of the block as a document of their
// own: blank lines, then `seats:` on the line before the first entry's
// (the block's own key line for the first part, which keeps the lines
// between the key and the first entry), then the entries' text.
func (b seatBlock) part(first, end int) []byte {
	from, stop := b.entries[first].off, b.end
	if first == 0 {
		from = b.key
	}
	if end < len(b.entries) {
		stop = b.entries[end].off
	}
	key := b.keyLineOf(first)
	out := make([]byte, 0, key+len("seats:\n")+stop-from)
	for range key {
		out = append(out, '\n')
	}
	out = append(out, "seats:\n"...)
	return append(out, b.data[from:stop]...)
}

// keyLineOf is the line (0-based) of the `seats:` key of the part whose
// first entry is first.
func (b seatBlock) keyLineOf(first int) int {
	if first == 0 {
		return b.keyLine
	}
	return b.entries[first].line - 1
}
