package config

import (
	"bytes"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// readFast reads a YAML document into the tree yaml.v3's parser builds for
// it (a DocumentNode holding the root), for the subset of YAML that
// configs are written in, in a fraction of the parser's time. ok is false
// for anything outside the subset, which the caller reads with yaml.v3,
// the reference: readFast never builds a tree yaml.v3 would not, and never
// reads as valid a text yaml.v3 rejects.
//
// The subset: a root block mapping, block sequence or flow collection;
// block mappings and sequences (compact mappings in sequence items, a
// sequence at its key's indentation); flow mappings and sequences, over
// several lines too; empty block mapping values; plain scalars on one line
// that resolve to a string, a decimal integer, true, false or null; single-
// and double-quoted scalars on one line (the escapes \\ \" \' \<space> \0 \a
// \b \t \n \v \f \r \e); comments; blank lines; LF or CRLF line ends. Declined:
// anchors, aliases, tags, block scalars, directives, document markers,
// complex keys, tabs, scalars over several lines, plain scalars resolving
// to anything else (floats, 0x, dates, <<), a byte order mark, and any
// character YAML treats specially (C0 and C1 controls, U+2028, U+2029,
// U+FEFF).
//
// The tree differs from yaml.v3's only in leaving the comment fields
// empty: nothing in config reads them. Its strings are substrings of one
// copy of data.
func readFast(data []byte) (doc *yaml.Node, ok bool) {
	if !fastBytes(data) {
		return nil, false
	}
	r := fastReader{s: string(data)}
	ind := r.nextLine()
	if ind < 0 {
		return nil, false // no content: yaml.v3 reads no document
	}
	var root *yaml.Node
	if c := r.s[r.i]; c == '{' || c == '[' {
		if root = r.flow(-1); root == nil || !r.endLine() || r.nextLine() >= 0 {
			return nil, false
		}
	} else if root = r.block(ind); root == nil || r.i < len(r.s) {
		return nil, false
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}, true
}

// fastBytes reports whether data holds only characters readFast knows:
// printable ASCII, LF, CR before LF, and UTF-8 of U+00A0 to U+FFFC but
// for the line and paragraph separators and the byte order mark; and no
// line that starts a directive or a document marker.
func fastBytes(data []byte) bool {
	if marker(data) {
		return false
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c >= 0x20 && c < 0x7f {
			continue
		}
		switch {
		case c == '\n':
			if marker(data[i+1:]) {
				return false
			}
		case c == '\r':
			if i+1 == len(data) || data[i+1] != '\n' {
				return false
			}
		case c < 0x80:
			return false // a tab or another control character
		default:
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError || r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff || r >= 0xfffe {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// marker reports whether line starts with a directive or a document
// marker.
func marker(line []byte) bool {
	return len(line) > 0 && (line[0] == '%' || bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("...")))
}

// fastReader is readFast's position in the text: i is an offset in s, on
// line (1-based), which starts at offset start.
type fastReader struct {
	s     string
	i     int
	line  int
	start int
	ascii int // the current line is ASCII up to this offset (col)
	depth int // of the collection being read
}

// maxDepth is the deepest nesting of collections readFast reads (yaml.v3
// rejects more than 10,000).
const maxDepth = 1000

// enter counts a collection in, leave out; enter reports false past
// maxDepth.
func (r *fastReader) enter() bool { r.depth++; return r.depth <= maxDepth }
func (r *fastReader) leave()      { r.depth-- }

// maxKey is the longest key readFast reads: yaml.v3 takes no implicit key
// of more than 1024 characters.
const maxKey = 1000

// col returns the column (1-based, in characters) of offset i on the
// current line.
func (r *fastReader) col(i int) int {
	for r.ascii = max(r.ascii, r.start); r.ascii < i; r.ascii++ {
		if r.s[r.ascii] >= 0x80 {
			return 1 + utf8.RuneCountInString(r.s[r.start:i])
		}
	}
	return 1 + i - r.start
}

// eol reports whether offset i ends a line (or the text).
func (r *fastReader) eol(i int) bool {
	return i >= len(r.s) || r.s[i] == '\n' || r.s[i] == '\r'
}

// newline moves past the line end at r.i, to the next line.
func (r *fastReader) newline() {
	if r.s[r.i] == '\r' {
		r.i++
	}
	r.i++
	r.line++
	r.start = r.i
}

// nextLine moves to the first character of the next line with content
// (from r.i, which is at the start of a line or at a line end), past blank
// and comment lines, and returns its indentation; -1 at the end of the
// text (r.i then len(s)).
func (r *fastReader) nextLine() int {
	if r.line == 0 {
		r.line = 1
	} else if r.i < len(r.s) && r.eol(r.i) {
		r.newline()
	}
	for r.i < len(r.s) {
		j := r.i
		for j < len(r.s) && r.s[j] == ' ' {
			j++
		}
		if !r.eol(j) && r.s[j] != '#' {
			r.i = j
			return j - r.start
		}
		for !r.eol(j) {
			j++
		}
		if r.i = j; j == len(r.s) {
			break
		}
		r.newline()
	}
	return -1
}

// endLine moves past spaces and a comment to the end of the line: false
// when anything else is there.
func (r *fastReader) endLine() bool {
	j := r.i
	for j < len(r.s) && r.s[j] == ' ' {
		j++
	}
	if j < len(r.s) && r.s[j] == '#' && j > r.start && r.s[j-1] == ' ' {
		for !r.eol(j) {
			j++
		}
	}
	r.i = j
	return r.eol(j)
}

// block reads the block mapping or sequence whose first line has
// indentation ind, r.i at its first character. It returns nil for anything
// else.
func (r *fastReader) block(ind int) *yaml.Node {
	if r.isEntry(r.i) {
		return r.sequence(ind, false)
	}
	return r.mapping(ind)
}

// isEntry reports whether a block sequence entry starts at offset i.
func (r *fastReader) isEntry(i int) bool {
	return r.s[i] == '-' && (r.eol(i+1) || r.s[i+1] == ' ')
}

// mapping reads a block mapping whose keys stand at indentation ind, r.i
// at its first key.
func (r *fastReader) mapping(ind int) *yaml.Node {
	defer r.leave()
	if !r.enter() {
		return nil
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: r.line, Column: r.col(r.i)}
	for {
		k := r.key(false)
		if k == nil {
			return nil
		}
		// r.i is just after the colon.
		emptyLine, emptyCol := r.line, r.col(r.i)
		for r.i < len(r.s) && r.s[r.i] == ' ' {
			r.i++
		}
		var v *yaml.Node
		if r.eol(r.i) || r.s[r.i] == '#' {
			if !r.endLine() {
				return nil
			}
			d := r.nextLine()
			switch {
			case d > ind:
				v = r.block(d)
			case d == ind && r.isEntry(r.i):
				v = r.sequence(ind, true)
			default:
				v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: emptyLine, Column: emptyCol}
				m.Content = append(m.Content, k, v)
				if d == ind {
					continue
				}
				return m
			}
		} else {
			v = r.inlineLine(ind)
		}
		if v == nil {
			return nil
		}
		m.Content = append(m.Content, k, v)
		d := r.i - r.start
		switch {
		case r.i >= len(r.s) || d < ind:
			return m
		case d > ind || r.isEntry(r.i):
			return nil
		}
	}
}

// inlineLine reads a value that ends its line (inline) and moves to the
// next line; nil when it cannot, or when more than a comment follows it.
func (r *fastReader) inlineLine(ind int) *yaml.Node {
	v := r.inline(ind)
	if v == nil || !r.endLine() {
		return nil
	}
	r.nextLine()
	return v
}

// sequence reads a block sequence whose entries stand at indentation ind,
// r.i at the first; indentless: the sequence is a mapping value at its
// key's indentation, and ends before a line at ind that is no entry.
func (r *fastReader) sequence(ind int, indentless bool) *yaml.Node {
	defer r.leave()
	if !r.enter() {
		return nil
	}
	q := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: r.line, Column: r.col(r.i)}
	for {
		r.i++ // the dash
		for r.i < len(r.s) && r.s[r.i] == ' ' {
			r.i++
		}
		var v *yaml.Node
		if r.eol(r.i) || r.s[r.i] == '#' {
			if !r.endLine() {
				return nil
			}
			if d := r.nextLine(); d > ind {
				v = r.block(d)
			}
		} else if r.isEntry(r.i) {
			return nil // a compact nested sequence
		} else if r.isKey() {
			v = r.mapping(r.i - r.start)
		} else {
			v = r.inlineLine(ind)
		}
		if v == nil {
			return nil
		}
		q.Content = append(q.Content, v)
		d := r.i - r.start
		switch {
		case r.i >= len(r.s) || d < ind:
			return q
		case d > ind:
			return nil
		case !r.isEntry(r.i):
			if indentless {
				return q
			}
			return nil
		}
	}
}

// isKey reports whether a mapping key (a scalar, a colon) starts at r.i,
// without moving.
func (r *fastReader) isKey() bool {
	at, line, start := r.i, r.line, r.start
	k := r.key(false)
	r.i, r.line, r.start = at, line, start
	return k != nil
}

// key reads a mapping key and its colon; r.i is then just after the
// colon, which a space or a line end follows (in a flow mapping: a space
// or a line end). nil: no key readFast reads.
func (r *fastReader) key(flow bool) *yaml.Node {
	from := r.i
	k := r.scalar(flow)
	if k == nil {
		return nil
	}
	for r.i < len(r.s) && r.s[r.i] == ' ' {
		r.i++
	}
	if r.i >= len(r.s) || r.s[r.i] != ':' || r.i-from > maxKey {
		return nil
	}
	r.i++
	if !r.eol(r.i) && r.s[r.i] != ' ' {
		return nil
	}
	return k
}

// inline reads a mapping value or sequence entry that starts on the line
// of its key or dash: a flow collection or a scalar. ind is the
// indentation of the block it is in.
func (r *fastReader) inline(ind int) *yaml.Node {
	if c := r.s[r.i]; c == '{' || c == '[' {
		return r.flow(ind)
	}
	return r.scalar(false)
}

// flow reads a flow mapping or sequence, r.i at its bracket; its lines
// after the first must be indented deeper than ind.
func (r *fastReader) flow(ind int) *yaml.Node {
	defer r.leave()
	if !r.enter() {
		return nil
	}
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle, Line: r.line, Column: r.col(r.i)}
	end := byte(']')
	if r.s[r.i] == '{' {
		n.Kind, n.Tag, end = yaml.MappingNode, "!!map", '}'
	}
	r.i++
	for first := true; ; first = false {
		if !r.flowSpace(ind) {
			return nil
		}
		if r.s[r.i] == end && first {
			r.i++
			return n
		}
		if n.Kind == yaml.MappingNode {
			k := r.key(true)
			if k == nil || !r.flowSpace(ind) {
				return nil
			}
			n.Content = append(n.Content, k)
		}
		v := r.flowNode(ind)
		if v == nil || !r.flowSpace(ind) {
			return nil
		}
		n.Content = append(n.Content, v)
		switch r.s[r.i] {
		case end:
			r.i++
			return n
		case ',':
			r.i++
		default:
			return nil
		}
	}
}

// flowNode reads a node in a flow collection: a flow collection or a
// scalar.
func (r *fastReader) flowNode(ind int) *yaml.Node {
	if c := r.s[r.i]; c == '{' || c == '[' {
		return r.flow(ind)
	}
	v := r.scalar(true)
	if v == nil {
		return nil
	}
	j := r.i
	for j < len(r.s) && r.s[j] == ' ' {
		j++
	}
	if v.Style == 0 && r.eol(j) {
		// A plain scalar at a line end would go on on the next line
		// unless a comma, a closing bracket or a comment comes first.
		for j < len(r.s) && (r.s[j] == ' ' || r.s[j] == '\n' || r.s[j] == '\r') {
			j++
		}
		if j == len(r.s) || strings.IndexByte(",]}#", r.s[j]) < 0 {
			return nil
		}
	}
	return v
}

// flowSpace moves past spaces, line ends and comments in a flow
// collection to its next character: false at the end of the text, or at a
// line indented no deeper than ind.
func (r *fastReader) flowSpace(ind int) bool {
	for r.i < len(r.s) {
		switch c := r.s[r.i]; {
		case c == ' ':
			r.i++
		case c == '#':
			if r.i == r.start || r.s[r.i-1] != ' ' {
				return false
			}
			for !r.eol(r.i) {
				r.i++
			}
		case c == '\n' || c == '\r':
			r.newline()
			j := r.i
			for j < len(r.s) && r.s[j] == ' ' {
				j++
			}
			if !r.eol(j) && j-r.start <= ind {
				return false
			}
			r.i = j
		default:
			return true
		}
	}
	return false
}

// useFast turns readFast on for decodeRoot and decodeEntry (tests turn it
// off to compare).
var useFast = true

// adoptTree decodes, as a strict yaml.v3 Decoder decodes a document, the
// tree that out (a *checked or an *entryDecoder, whose fast field holds
// it) puts in place of the root node it is given. yaml.v3 decodes a tree
// strictly (KnownFields) only from the text a Decoder parses: out is
// decoded from a one-scalar document, whose node it overwrites with the
// tree's root through the Decoder's own unmarshal function, so that the
// rest is decoded exactly as it would be from the tree's text.
//
// Setting up a Decoder costs more than reading a seat file with readFast:
// the Decoders are pooled, each reading the next document of an endless
// stream of one-scalar documents (a Decoder keeps only its parser from one
// document to the next; the parser keeps the last document's node until
// the next, which holds the tree's root).
func adoptTree(out interface{ UnmarshalYAML(func(any) error) error }) error {
	dec, _ := scalarDecoders.Get().(*yaml.Decoder)
	if dec == nil {
		dec = yaml.NewDecoder(&scalarStream{})
		dec.KnownFields(true)
	}
	err := dec.Decode(out)
	if err == nil {
		scalarDecoders.Put(dec)
	}
	return err
}

var scalarDecoders sync.Pool // of *yaml.Decoder over a scalarStream

// scalarStream is an endless YAML stream of the document `--- 0`.
type scalarStream struct{ off int }

const scalarDoc = "--- 0\n"

func (s *scalarStream) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = scalarDoc[s.off]
		s.off = (s.off + 1) % len(scalarDoc)
	}
	return len(p), nil
}
