package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)
var yamlUnknown = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

// decodeStrict decodes one YAML document, rejecting unknown keys, and
// rewrites yaml.v3's errors as "<file>:<line>: <problem>"; a value of the
// wrong type is "<file>:<line>: <key path>: want ..., got ...". Every
// problem is returned together.
func decodeStrict(name string, data []byte, out any) error {
	_, err := decodeAll(name, data, out)
	return err
}

// decodeAll is decodeStrict that also tells whether out was decoded
// (false: the document does not parse, out is as it was). The document is
// parsed once: the strict decoder hands its root node to checked, which
// checks the types over it, then decodes it into out.
func decodeAll(name string, data []byte, out any) (bool, error) {
	_, ok, err := decodeRoot(name, data, out)
	return ok, err
}

// decodeRoot is decodeAll that also returns the document's root node (nil
// when there is none). A document readFast reads is decoded from its tree
// when that decodes without an error; anything else (another document, an
// error) is decoded from its text by yaml.v3 alone, which reports errors
// in its own words, over what the first try decoded into out.
func decodeRoot(name string, data []byte, out any) (*yaml.Node, bool, error) {
	if useFast {
		if doc, ok := readFast(data); ok {
			w := checked{name: name, out: out, typed: map[int]bool{}, fast: doc.Content[0]}
			if err := adoptTree(&w); err == nil && len(w.errs) == 0 {
				return w.root, true, nil
			}
		}
	}
	w := checked{name: name, out: out, typed: map[int]bool{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&w)
	if err == nil || errors.Is(err, io.EOF) {
		return w.root, true, joinErrors(w.errs)
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return nil, false, yamlError(name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	errs := w.errs
	for _, m := range te.Errors {
		if l := yamlLine.FindStringSubmatch(m); l != nil && strings.HasPrefix(l[2], "cannot unmarshal") {
			if n, _ := strconv.Atoi(l[1]); w.typed[n] {
				continue // reported with its key path
			}
		}
		errs = append(errs, yamlError(name, m))
	}
	return w.root, true, joinErrors(errs)
}

// checked is what decodeAll decodes a document into: through the
// unmarshal function, which is the strict decoder's own, it takes the root
// node, checks its types against out (errs; typed holds their lines) and
// decodes it into out. With fast, the root node is given fast's value
// first (adoptTree).
type checked struct {
	name  string
	out   any
	errs  []error
	typed map[int]bool
	root  *yaml.Node
	fast  *yaml.Node
}

func (c *checked) UnmarshalYAML(unmarshal func(any) error) error {
	var n nodeOf
	if err := unmarshal(&n); err != nil {
		return err
	}
	if c.fast != nil {
		*n.Node = *c.fast
	}
	c.root = n.Node
	checkTypes(c.name, "", n.Node, reflect.TypeOf(c.out), &c.errs, c.typed)
	return unmarshal(c.out)
}

// KeyError is a value of the wrong type, named by its key path.
type KeyError struct {
	File string
	Line int
	Path string // policy.gates[2].options.maxMs
	Msg  string // want an integer, got "twenty"
}

func (e *KeyError) Error() string { return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Path, e.Msg) }

var (
	nodeType        = reflect.TypeOf(yaml.Node{})
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// checkTypes walks a YAML node against the Go type it decodes into and
// reports every value of the wrong kind (a string for an integer, a list
// for a mapping) with its key path; typed collects their lines. A scalar is
// judged by decoding it alone into the field's type, so what yaml.v3
// accepts (0x10, 1e3 for an int; yes for a bool) is accepted. Unknown keys
// are the decoder's to report; types with their own UnmarshalYAML and
// yaml.Node fields are skipped.
func checkTypes(name, path string, n *yaml.Node, t reflect.Type, errs *[]error, typed map[int]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) || isNull(n) {
		return
	}
	bad := func(want string) {
		typed[n.Line] = true
		p := path
		if p == "" {
			p = "(top level)"
		}
		*errs = append(*errs, &KeyError{File: name, Line: n.Line, Path: p, Msg: "want " + want + ", got " + describe(n)})
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad("a mapping")
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if ft, ok := fields[n.Content[i].Value]; ok {
				checkTypes(name, join(n.Content[i].Value), n.Content[i+1], ft, errs, typed)
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkTypes(name, join(n.Content[i].Value), n.Content[i+1], t.Elem(), errs, typed)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			bad("a list")
			return
		}
		for i, c := range n.Content {
			checkTypes(name, fmt.Sprintf("%s[%d]", path, i), c, t.Elem(), errs, typed)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !decodesAs(n, t) {
			bad("an integer")
		}
	case reflect.Float32, reflect.Float64:
		if !decodesAs(n, t) {
			bad("a number")
		}
	case reflect.Bool:
		if !decodesAs(n, t) {
			bad("true or false")
		}
	case reflect.String:
		if !decodesAs(n, t) {
			bad("a string")
		}
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// decodesAs reports whether yaml.v3 decodes the scalar n into a t. The
// common cases are answered without decoding (a config of 10,000 seats
// holds tens of thousands of scalars): a plain string, a decimal integer
// that fits, true or false, into a type with no decoding of its own.
func decodesAs(n *yaml.Node, t reflect.Type) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	if t != durationType && !reflect.PointerTo(t).Implements(textUnmarshalerType) {
		switch k := t.Kind(); {
		case k == reflect.String && n.Tag == "!!str":
			return true
		case k == reflect.Bool && n.Tag == "!!bool" && (n.Value == "true" || n.Value == "false"):
			return true
		case k >= reflect.Int && k <= reflect.Int64 && n.Tag == "!!int":
			if _, err := strconv.ParseInt(n.Value, 10, t.Bits()); err == nil {
				return true
			}
		case k >= reflect.Uint && k <= reflect.Uint64 && n.Tag == "!!int":
			if _, err := strconv.ParseUint(n.Value, 10, t.Bits()); err == nil {
				return true
			}
		}
	}
	return n.Decode(reflect.New(t).Interface()) == nil
}

var (
	durationType        = reflect.TypeOf(time.Duration(0))
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// describe names a node's value for an error: the scalar quoted, or its kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func yamlError(name, msg string) error {
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		what := m[2]
		if u := yamlUnknown.FindStringSubmatch(what); u != nil {
			what = fmt.Sprintf("unknown key %q", u[1])
		}
		return fmt.Errorf("%s:%s: %s", name, m[1], what)
	}
	return fmt.Errorf("%s: %s", name, msg)
}

// HasOptions reports whether an options block was given: a key left out
// or written as null gives none.
func HasOptions(node *yaml.Node) bool {
	return node != nil && node.Kind != 0 && !(node.Kind == yaml.ScalarNode && node.Tag == "!!null")
}

// DecodeOptions strictly decodes a gate's options block, found at the key
// path path returns (policy.gates[2].options; called only to report a
// value of the wrong type), into dst, a pointer to the gate's
// options struct: every mapping key must name a yaml-tagged field
// (recursively), and a struct is given a mapping. Errors are
// "<name>:<line>: <problem>"; a value of the wrong type is a *KeyError,
// "<name>:<line>: <path>.<key>: want ..., got ...", and when there is one,
// only those are returned (errors.As finds a *KeyError). A block not given
// leaves dst as it is.
func DecodeOptions(name string, path func() string, node *yaml.Node, dst any) error {
	if !HasOptions(node) {
		return nil
	}
	var errs []error
	checkKeys(name, node, reflect.TypeOf(dst), &errs)
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	checkTypes(name, "", node, reflect.TypeOf(dst), &errs, map[int]bool{})
	if len(errs) > 0 { // once more, for the messages: with the key path
		errs = errs[:0]
		checkTypes(name, path(), node, reflect.TypeOf(dst), &errs, map[int]bool{})
		return joinErrors(errs)
	}
	if err := node.Decode(dst); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				errs = append(errs, yamlError(name, m))
			}
			return joinErrors(errs)
		}
		return fmt.Errorf("%s:%d: %w", name, node.Line, err)
	}
	return nil
}

func checkKeys(name string, n *yaml.Node, t reflect.Type, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if t == reflect.TypeOf(yaml.Node{}) || reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
				*errs = append(*errs, fmt.Errorf("%s:%d: expected a mapping", name, n.Line))
			}
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			ft, ok := fields[k]
			if !ok {
				*errs = append(*errs, fmt.Errorf("%s:%d: unknown option %q", name, n.Content[i].Line, k))
				continue
			}
			checkKeys(name, n.Content[i+1], ft, errs)
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				checkKeys(name, n.Content[i], t.Elem(), errs)
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				checkKeys(name, c, t.Elem(), errs)
			}
		}
	}
}

// fieldsOf caches yamlFields: a config of many seats decodes the same
// options structs thousands of times.
var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// yamlFields maps the yaml names of struct type t's fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		fields[tag] = f.Type
	}
	fieldsOf.Store(t, fields)
	return fields
}

// UnmarshalYAML decodes a gate entry, which has exactly the keys gate, name,
// mode and options, and records its line.
func (g *GateConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a gate entry is a mapping with the keys gate, name, mode, options", n.Line)}}
	}
	var bad []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "gate", "name", "mode":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				bad = append(bad, fmt.Sprintf("line %d: %s must be a string", v.Line, k.Value))
				continue
			}
			switch k.Value {
			case "gate":
				g.Gate = v.Value
			case "name":
				g.Name = v.Value
			default:
				g.Mode = v.Value
			}
		case "options":
			g.Options = *v
		default:
			bad = append(bad, fmt.Sprintf("line %d: unknown key %q in a gate entry (keys: gate, name, mode, options)", k.Line, k.Value))
		}
	}
	g.line = n.Line
	if len(bad) > 0 {
		return &yaml.TypeError{Errors: bad}
	}
	return nil
}

// UnmarshalYAML decodes the seats mapping strictly, as yaml.v3 decodes a
// map, in time linear in the number of seats. yaml.v3 compares every pair of
// a mapping's keys to find duplicates (a second at 10,000 seats, minutes at
// 100,000): here the duplicates are found with a map and reported in
// yaml.v3's words and order, then the mapping is decoded seatChunk seats
// at a time, whose keys yaml.v3 compares within the chunk only, yielding
// the goroutine between two chunks. A mapping with a merge key (<<) is decoded as a whole: merged
// keys yield to the mapping's own, which only yaml.v3's map decoding knows.
func (s *SeatConfigs) UnmarshalYAML(unmarshal func(any) error) error {
	var n nodeOf
	if err := unmarshal(&n); err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode || hasMergeKey(n.Node) {
		return unmarshal((*map[string]SeatConfig)(s))
	}
	if dups := duplicateKeys(n.Node); len(dups) > 0 {
		return &yaml.TypeError{Errors: dups}
	}
	whole := *n.Node
	if *s == nil {
		*s = make(SeatConfigs, len(whole.Content)/2)
	}
	// The node is the document's: it is restored before anything else
	// (an alias of it) reads it.
	defer func() { *n.Node = whole }()
	var errs []string
	for i := 0; i < len(whole.Content); i += 2 * seatChunk {
		if i > 0 {
			runtime.Gosched() // a reload runs beside the bid path, on few cores
		}
		end := min(i+2*seatChunk, len(whole.Content))
		n.Content = whole.Content[i:end:end]
		n.Line, n.Column = n.Content[0].Line, n.Content[0].Column
		if err := unmarshal((*map[string]SeatConfig)(s)); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return err
			}
			errs = append(errs, te.Errors...)
		}
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// seatChunk is how many seats are decoded as one mapping.
const seatChunk = 32

// hasMergeKey reports whether a key of the mapping n may be a merge key.
func hasMergeKey(n *yaml.Node) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" {
			return true
		}
	}
	return false
}

// nodeOf takes the node it is decoded from, aliases resolved.
type nodeOf struct{ *yaml.Node }

func (n *nodeOf) UnmarshalYAML(node *yaml.Node) error {
	n.Node = node
	return nil
}

// duplicateKeys returns yaml.v3's errors for the duplicate keys of the
// mapping n: one per pair of equal keys, by the first key's then the
// second's position.
func duplicateKeys(n *yaml.Node) []string {
	type key struct {
		kind  yaml.Kind
		value string
	}
	count := make(map[key]int, len(n.Content)/2)
	dup := false
	for i := 0; i < len(n.Content); i += 2 {
		k := key{n.Content[i].Kind, n.Content[i].Value}
		count[k]++
		dup = dup || count[k] > 1
	}
	if !dup {
		return nil
	}
	at := map[key][]*yaml.Node{} // the occurrences of each duplicate key
	for i := 0; i < len(n.Content); i += 2 {
		if k := (key{n.Content[i].Kind, n.Content[i].Value}); count[k] > 1 {
			at[k] = append(at[k], n.Content[i])
		}
	}
	var errs []string
	for i := 0; i < len(n.Content); i += 2 {
		ni := n.Content[i]
		occ := at[key{ni.Kind, ni.Value}]
		for len(occ) > 0 && occ[0] != ni {
			occ = occ[1:]
		}
		for _, nj := range occ[min(1, len(occ)):] {
			errs = append(errs, fmt.Sprintf("line %d: mapping key %#v already defined at line %d", nj.Line, nj.Value, ni.Line))
		}
	}
	return errs
}

// parseDuration reads a Go duration; 0 may be written without a unit. A
// negative duration is an error; whether 0 is allowed is the key's to say.
func parseDuration(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n == 0 {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (30s, 5m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return int64(d), nil
}

func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
