package capture

import (
	"strings"

	"github.com/bidguard/bidguard/jsonraw"
)

// Redactor replaces the values at a set of JSON paths by null. It is built
// once and safe for concurrent use.
type Redactor struct{ root node }

// node is one member name of the paths: leaf when a path ends there.
type node struct {
	name string
	leaf bool
	kids []*node
}

// NewRedactor compiles paths (ValidatePath must accept each). A path that
// continues past another's end adds nothing: the shorter one blanks the
// whole value.
func NewRedactor(paths []string) *Redactor {
	r := &Redactor{}
	for _, p := range paths {
		n := &r.root
		for _, name := range strings.Split(p, ".") {
			n = n.child(name)
		}
		n.leaf = true
	}
	return r
}

func (n *node) child(name string) *node {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	k := &node{name: name}
	n.kids = append(n.kids, k)
	return k
}

// match is the child whose name the raw key matches (jsonraw.KeyIs: as
// the decoder matches it to a field), or nil.
func (n *node) match(key []byte) *node {
	for _, k := range n.kids {
		if jsonraw.KeyIs(key, k.name) {
			return k
		}
	}
	return nil
}

// Append appends doc, a JSON document the engine decoded, to dst with every
// redacted value replaced by null (every member whose key matches, a
// duplicate key included) and every line break by a space: valid JSON has
// line breaks only between tokens, so the document stays the same JSON on
// one line.
func (r *Redactor) Append(dst, doc []byte) []byte {
	start := len(dst)
	dst = r.root.appendObject(dst, doc)
	oneLine(dst[start:])
	return dst
}

// appendObject appends v with its members below n redacted; a v that is
// not an object is appended as it is.
func (n *node) appendObject(dst, v []byte) []byte {
	if len(n.kids) == 0 {
		return append(dst, v...)
	}
	m, ok := jsonraw.Object(v)
	if !ok {
		return append(dst, v...)
	}
	last := 0
	for {
		key, val, more := m.Next()
		if !more {
			break
		}
		k := n.match(key)
		if k == nil {
			continue
		}
		_, end := m.Span()
		dst = append(dst, v[last:end-len(val)]...)
		if k.leaf {
			dst = append(dst, "null"...)
		} else {
			dst = k.appendObject(dst, val)
		}
		last = end
	}
	return append(dst, v[last:]...)
}

// oneLine turns line breaks into spaces.
func oneLine(b []byte) {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
}
